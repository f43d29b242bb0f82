package sim

import (
	"bytes"
)

// maxCommandBytes bounds one request; a larger one is a protocol error.
const maxCommandBytes = 64 << 20

// parseCommands splits buf into complete RESP command arrays (as go-redis
// writes them: *N\r\n then N bulk strings) and returns the unparsed rest.
// The arguments of all the commands share one string (one allocation for
// the bytes, one for the argument slices).
func parseCommands(buf []byte) (cmds [][]string, rest []byte, err error) {
	// First pass: how many complete commands, arguments and bytes.
	ncmd, nargs, used := 0, 0, 0
	for used < len(buf) {
		count, n, err := scanOne(buf[used:])
		if err != nil {
			return nil, nil, err
		}
		if n == 0 {
			break
		}
		ncmd++
		nargs += count
		used += n
	}
	if len(buf)-used > maxCommandBytes {
		return nil, nil, errProtocol
	}
	if ncmd == 0 {
		return nil, buf, nil
	}
	// Second pass: cut the arguments out of one string.
	str := string(buf[:used])
	all := make([]string, 0, nargs)
	cmds = make([][]string, 0, ncmd)
	pos := 0
	for range ncmd {
		line, next, _ := readLine(buf, pos)
		count, _ := atoi(line[1:])
		first := len(all)
		pos = next
		for range count {
			line, next, _ := readLine(buf, pos)
			l, _ := atoi(line[1:])
			all = append(all, str[next:next+l])
			pos = next + l + 2
		}
		cmds = append(cmds, all[first:len(all):len(all)])
	}
	return cmds, buf[used:], nil
}

// scanOne checks the command at the start of buf: its argument count and
// length, n == 0 when buf holds only part of it.
func scanOne(buf []byte) (count, n int, err error) {
	if buf[0] != '*' {
		return 0, 0, errProtocol
	}
	line, pos, ok := readLine(buf, 0)
	if !ok {
		return 0, 0, nil
	}
	count, ok = atoi(line[1:])
	if !ok || count < 1 || count > 1<<20 {
		return 0, 0, errProtocol
	}
	for i := 0; i < count; i++ {
		line, next, ok := readLine(buf, pos)
		if !ok {
			return 0, 0, nil
		}
		if len(line) == 0 || line[0] != '$' {
			return 0, 0, errProtocol
		}
		l, ok := atoi(line[1:])
		if !ok || l < 0 || l > maxCommandBytes {
			return 0, 0, errProtocol
		}
		if next+l+2 > len(buf) {
			return 0, 0, nil
		}
		pos = next + l + 2
	}
	return count, pos, nil
}

// atoi parses a RESP length: decimal digits, at most 9 of them (every
// length locksim accepts is below 1e9), a leading '-' allowed (a null
// bulk string's -1). Anything else is not ok.
func atoi(b []byte) (int, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 9 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// readLine returns the line of buf that starts at from, without its
// CRLF, and where the next line starts; not ok when buf holds no CRLF
// after from. A lone CR or LF is part of the line.
func readLine(buf []byte, from int) ([]byte, int, bool) {
	for i := from; ; {
		j := bytes.IndexByte(buf[i:], '\n')
		if j < 0 {
			return nil, 0, false
		}
		i += j
		if i > from && buf[i-1] == '\r' {
			return buf[from : i-1], i + 1, true
		}
		i++
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
