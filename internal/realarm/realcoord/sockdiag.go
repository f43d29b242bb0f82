package realcoord

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"syscall"
)

// diagInode asks the kernel (netlink sock_diag, an exact lookup of one
// IPv4 TCP socket: what `ss` uses) for the inode of the socket whose
// local address is local and remote address remote. 0 when no socket
// matches. A reading of /proc/net/tcp (socketInode) costs about 1 ms on
// a machine with a few hundred sockets (BenchmarkProcInode), and a cut
// etcd link makes its members redial hundreds of times a second.
func diagInode(local, remote netip.AddrPort) (uint64, error) {
	if !local.Addr().Is4() || !remote.Addr().Is4() {
		return 0, errors.New("sock_diag lookup: IPv4 only")
	}
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, syscall.NETLINK_INET_DIAG)
	if err != nil {
		return 0, fmt.Errorf("sock_diag: %w", err)
	}
	defer syscall.Close(fd)
	tv := syscall.Timeval{Sec: 1}
	_ = syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv)
	if err := syscall.Bind(fd, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return 0, fmt.Errorf("sock_diag: bind: %w", err)
	}

	// struct nlmsghdr (16 bytes) + struct inet_diag_req_v2 (56 bytes).
	req := make([]byte, 16+56)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], sockDiagByFamily)
	ne.PutUint16(req[6:], syscall.NLM_F_REQUEST)
	ne.PutUint32(req[8:], 1) // seq
	r := req[16:]
	r[0] = syscall.AF_INET
	r[1] = syscall.IPPROTO_TCP
	ne.PutUint32(r[4:], 0xffffffff) // idiag_states: any
	putSockID(r[8:], local, remote)
	if err := syscall.Sendto(fd, req, 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return 0, fmt.Errorf("sock_diag: send: %w", err)
	}
	buf := make([]byte, 4096)
	n, _, err := syscall.Recvfrom(fd, buf, 0)
	if err != nil {
		return 0, fmt.Errorf("sock_diag: receive: %w", err)
	}
	return parseDiagReply(buf[:n])
}

// putSockID writes struct inet_diag_sockid (48 bytes): ports and
// addresses in network order, no interface, no cookie (an exact lookup
// by addresses: INET_DIAG_NOCOOKIE).
func putSockID(b []byte, local, remote netip.AddrPort) {
	binary.BigEndian.PutUint16(b[0:], local.Port())
	binary.BigEndian.PutUint16(b[2:], remote.Port())
	l, r := local.Addr().As4(), remote.Addr().As4()
	copy(b[4:8], l[:])
	copy(b[20:24], r[:])
	binary.NativeEndian.PutUint32(b[40:], 0xffffffff)
	binary.NativeEndian.PutUint32(b[44:], 0xffffffff)
}

// parseDiagReply reads the kernel's answer: one inet_diag_msg (its
// inode at offset 68), or an error message (ENOENT: no such socket).
func parseDiagReply(b []byte) (uint64, error) {
	ne := binary.NativeEndian
	if len(b) < 16 {
		return 0, fmt.Errorf("sock_diag: a reply of %d bytes", len(b))
	}
	typ := ne.Uint16(b[4:])
	body := b[16:]
	switch typ {
	case syscall.NLMSG_ERROR:
		if len(body) < 4 {
			return 0, errors.New("sock_diag: a short error reply")
		}
		errno := -int32(ne.Uint32(body))
		if errno == int32(syscall.ENOENT) {
			return 0, nil
		}
		return 0, fmt.Errorf("sock_diag: %w", syscall.Errno(errno))
	case sockDiagByFamily:
		if len(body) < 72 {
			return 0, fmt.Errorf("sock_diag: an inet_diag_msg of %d bytes", len(body))
		}
		return uint64(ne.Uint32(body[68:])), nil
	default:
		return 0, fmt.Errorf("sock_diag: a reply of type %d", typ)
	}
}

// sockDiagByFamily is SOCK_DIAG_BY_FAMILY, the request's and the
// answer's message type.
const sockDiagByFamily = 20
