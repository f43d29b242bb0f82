package sim

// What the external tests (package sim_test) reach of this package's
// internals and its own tests' helpers.

// ErrString and B2I are smoke_test.go's helpers.
var (
	ErrString = errString
	B2I       = b2i
)

// NativeName is the native table's name for a script body (native.go),
// "" when the engine runs it through the interpreter.
func NativeName(body string) string { return nativeScripts[sha1hex(body)].name }

// NativeBody is this package's tests' copy of a native script's body
// (nativeBodies, native_test.go).
func NativeBody(name string) string { return nativeBodies[name] }

// SetRedissonBodies hands in locks/catalogue's Redisson script bodies by
// their native names (redissonBodies, native_redisson_test.go).
func SetRedissonBodies(m map[string]string) { redissonBodies = m }
