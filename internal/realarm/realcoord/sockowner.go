package realcoord

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// socketInode finds, in /proc/net/tcp's format (read from tcp), the inode
// of the TCP socket whose local address is local and whose remote address
// is remote: the dialling end of a connection a proxy accepted, seen from
// the dialler's side (local: the accepted connection's remote address).
// 0 when no socket matches (the dialler closed it already).
func socketInode(tcp *bufio.Scanner, local, remote netip.AddrPort) (uint64, error) {
	first := true
	for tcp.Scan() {
		f := strings.Fields(tcp.Text())
		if first {
			first = false
			if len(f) > 0 && f[0] == "sl" {
				continue // the header line
			}
		}
		if len(f) < 10 {
			return 0, fmt.Errorf("/proc/net/tcp: a line of %d fields: %q", len(f), tcp.Text())
		}
		l, err := parseProcAddr(f[1])
		if err != nil {
			return 0, err
		}
		if l != local {
			continue
		}
		r, err := parseProcAddr(f[2])
		if err != nil {
			return 0, err
		}
		if r != remote {
			continue
		}
		return strconv.ParseUint(f[9], 10, 64)
	}
	return 0, tcp.Err()
}

// parseProcAddr reads /proc/net/tcp's "0100007F:1F90": the IPv4 address
// as the kernel's 32-bit word in host byte order, then the port.
func parseProcAddr(s string) (netip.AddrPort, error) {
	h, p, ok := strings.Cut(s, ":")
	if !ok || len(h) != 8 {
		return netip.AddrPort{}, fmt.Errorf("/proc/net/tcp: address %q is not an IPv4 address:port", s)
	}
	word, err := strconv.ParseUint(h, 16, 32)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("/proc/net/tcp: address %q: %w", s, err)
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("/proc/net/tcp: port of %q: %w", s, err)
	}
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], uint32(word)) // the word's bytes in memory are the address in network order
	return netip.AddrPortFrom(netip.AddrFrom4(b), uint16(port)), nil
}

// hasSocket reports whether process pid holds the socket inode among its
// open files (/proc/<pid>/fd/* links read "socket:[inode]").
func hasSocket(pid int, inode uint64) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	want := "socket:[" + strconv.FormatUint(inode, 10) + "]"
	for _, e := range ents {
		if l, err := os.Readlink(dir + "/" + e.Name()); err == nil && l == want {
			return true
		}
	}
	return false
}

// connOwner returns which of pids dialled the connection whose dialling
// end is local and whose accepting end is remote (-1: none of them, or
// the socket is gone). Every member dials its peers from 127.0.0.1
// (etcd 3.4's peer transport binds no local address: pkg/transport's
// net.Dialer has no LocalAddr, and the kernel's loopback route gives
// 127.0.0.1 as the source), so the source address cannot tell members
// apart; the dialling socket's owner can.
func connOwner(local, remote netip.AddrPort, pids []int) (int, error) {
	inode, err := diagInode(local, remote)
	if err != nil {
		inode, err = procInode(local, remote) // no sock_diag: the slow way
	}
	if err != nil || inode == 0 {
		return -1, err
	}
	for i, pid := range pids {
		if pid > 0 && hasSocket(pid, inode) {
			return i, nil
		}
	}
	return -1, nil
}

// procInode is socketInode over this machine's /proc/net/tcp.
func procInode(local, remote netip.AddrPort) (uint64, error) {
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return socketInode(bufio.NewScanner(f), local, remote)
}
