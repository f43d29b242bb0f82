package sim

// native runs a known script without the Lua interpreter, when it can.
// It reports false to fall back to miniredis's interpreted path.
func (n *Node) native(c *conn, cmd string, args []string) bool { return false }
