package risk

// The tests estimate catalogue designs (set-nx-cad, redlock): the
// catalogue registers them when linked.
import _ "github.com/locksim/locksim/locks/catalogue"
