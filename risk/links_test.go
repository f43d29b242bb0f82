package risk

// The tests estimate locksim's own designs, which a program links by
// importing the catalogue (locks.Register); package risk itself does not.
import _ "github.com/locksim/locksim/locks/catalogue"
