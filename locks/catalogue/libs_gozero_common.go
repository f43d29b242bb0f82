package catalogue

const (
	goZeroID       = "go-zero"
	goZeroDesign   = "github.com/zeromicro/go-zero v1.10.3 core/stores/redis RedisLock, unmodified: one node, one attempt, Lua GET-then-SET PX (re-entrant) and Lua compare-and-delete"
	goZeroWeakness = "no validity signal: the holder cannot tell when its lease ran out; TTL is whole seconds + 500 ms (500 ms if SetExpire is never called); no retries; one node is a single point of failure"
)
