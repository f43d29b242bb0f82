package sim

import (
	"bytes"
	"strconv"
)

// maxCommandBytes bounds one request; a larger one is a protocol error.
const maxCommandBytes = 64 << 20

// parseCommands splits buf into complete RESP command arrays (as go-redis
// writes them: *N\r\n then N bulk strings) and returns the unparsed rest.
func parseCommands(buf []byte) (cmds [][]string, rest []byte, err error) {
	for len(buf) > 0 {
		args, n, err := parseOne(buf)
		if err != nil {
			return nil, nil, err
		}
		if n == 0 {
			break
		}
		cmds = append(cmds, args)
		buf = buf[n:]
	}
	if len(buf) > maxCommandBytes {
		return nil, nil, errProtocol
	}
	return cmds, buf, nil
}

// parseOne parses one command; n == 0 means buf holds only part of it.
func parseOne(buf []byte) (args []string, n int, err error) {
	if buf[0] != '*' {
		return nil, 0, errProtocol
	}
	line, pos, ok := readLine(buf, 0)
	if !ok {
		return nil, 0, nil
	}
	count, err := strconv.Atoi(string(line[1:]))
	if err != nil || count < 1 || count > 1<<20 {
		return nil, 0, errProtocol
	}
	args = make([]string, 0, count)
	for i := 0; i < count; i++ {
		line, next, ok := readLine(buf, pos)
		if !ok {
			return nil, 0, nil
		}
		if len(line) == 0 || line[0] != '$' {
			return nil, 0, errProtocol
		}
		l, err := strconv.Atoi(string(line[1:]))
		if err != nil || l < 0 || l > maxCommandBytes {
			return nil, 0, errProtocol
		}
		if next+l+2 > len(buf) {
			return nil, 0, nil
		}
		args = append(args, string(buf[next:next+l]))
		pos = next + l + 2
	}
	return args, pos, nil
}

func readLine(buf []byte, from int) ([]byte, int, bool) {
	i := bytes.Index(buf[from:], []byte("\r\n"))
	if i < 0 {
		return nil, 0, false
	}
	return buf[from : from+i], from + i + 2, true
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
