package netns

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// setup runs inside the sandbox's network namespace (on a thread that
// joined it, or in the helper): it opens den's listeners, gives the
// namespace den0 with its addresses and routes, and installs the rules.
// It returns the listeners' files: TCP over IPv4, TCP over IPv6 (the
// same port), DNS over UDP. Every socket it makes belongs to the
// namespace of the thread that makes it, so nothing here may hop to
// another goroutine.
func setup() (files []*os.File, err error) {
	defer func() {
		if err != nil {
			for _, f := range files {
				f.Close()
			}
			files = nil
		}
	}()
	tcp4, err := listenFile("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	files = append(files, tcp4)
	port, err := boundPort(tcp4)
	if err != nil {
		return files, err
	}
	tcp6, err := listenFile("tcp6", "[::1]:"+strconv.Itoa(port))
	if err != nil {
		return files, fmt.Errorf("listen on ::1: %w", err)
	}
	files = append(files, tcp6)
	udp, err := listenFile("udp4", "127.0.0.1:0")
	if err != nil {
		return files, fmt.Errorf("listen: %w", err)
	}
	files = append(files, udp)
	dnsPort, err := boundPort(udp)
	if err != nil {
		return files, err
	}
	if err := link(); err != nil {
		return files, err
	}
	if err := rules(uint16(port), uint16(dnsPort)); err != nil {
		return files, err
	}
	return files, nil
}

// listenFile opens a listening socket (or a UDP socket) and returns its
// file; the Go listener itself is closed, the socket lives on in the
// file.
func listenFile(network, addr string) (*os.File, error) {
	if network == "udp4" {
		pc, err := net.ListenPacket(network, addr)
		if err != nil {
			return nil, err
		}
		defer pc.Close()
		return pc.(*net.UDPConn).File()
	}
	l, err := net.Listen(network, addr)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	return l.(*net.TCPListener).File()
}

func boundPort(f *os.File) (int, error) {
	sa, err := unix.Getsockname(int(f.Fd()))
	if err != nil {
		return 0, fmt.Errorf("getsockname: %w", err)
	}
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return sa.Port, nil
	case *unix.SockaddrInet6:
		return sa.Port, nil
	}
	return 0, fmt.Errorf("getsockname: unexpected %T", sa)
}

// link makes den0 (a veth whose peer den1 stays inside too), its
// addresses and the default routes.
func link() error {
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("netlink: %w", err)
	}
	defer h.Close()
	la := netlink.NewLinkAttrs()
	la.Name, la.MTU = Interface, mtu
	if err := h.LinkAdd(&netlink.Veth{LinkAttrs: la, PeerName: peer, PeerMTU: mtu}); err != nil {
		return fmt.Errorf("add %s: %w", Interface, err)
	}
	dev, err := h.LinkByName(Interface)
	if err != nil {
		return fmt.Errorf("find %s: %w", Interface, err)
	}
	other, err := h.LinkByName(peer)
	if err != nil {
		return fmt.Errorf("find %s: %w", peer, err)
	}
	for _, a := range []string{Address, Address6} {
		ip, ipnet, err := net.ParseCIDR(a)
		if err != nil {
			return err
		}
		ipnet.IP = ip
		// No duplicate address detection: the address is usable at
		// once, and there is nobody on the link to ask.
		if err := h.AddrAdd(dev, &netlink.Addr{IPNet: ipnet, Flags: unix.IFA_F_NODAD}); err != nil {
			return fmt.Errorf("address %s: %w", a, err)
		}
	}
	for _, l := range []netlink.Link{other, dev} {
		if err := h.LinkSetUp(l); err != nil {
			return fmt.Errorf("up %s: %w", l.Attrs().Name, err)
		}
	}
	for _, gw := range []string{Gateway, Gateway6} {
		if err := h.RouteAdd(&netlink.Route{LinkIndex: dev.Attrs().Index, Gw: net.ParseIP(gw)}); err != nil {
			return fmt.Errorf("default route via %s: %w", gw, err)
		}
	}
	return nil
}

// rules installs table inet den:
//
//	chain nat { type nat hook output priority -100;
//	  oifname "lo" accept
//	  meta l4proto tcp redirect to :port
//	  meta nfproto ipv4 udp dport 53 redirect to :dnsPort }
//	chain out { type filter hook output priority 0; policy drop;
//	  oifname "lo" accept
//	  ct status dnat accept }
//
// The filter sees a redirected packet with its first route (den0), so
// it lets redirected connections through by their conntrack status,
// not by interface.
func rules(port, dnsPort uint16) error {
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	t := c.AddTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: table})
	nat := c.AddChain(&nftables.Chain{Name: "nat", Table: t, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityNATDest})
	drop := nftables.ChainPolicyDrop
	out := c.AddChain(&nftables.Chain{Name: "out", Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityFilter, Policy: &drop})
	accept := &expr.Verdict{Kind: expr.VerdictAccept}
	loopback := []expr.Any{
		&expr.Meta{Key: expr.MetaKeyOIFNAME, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: ifname("lo")},
		accept,
	}
	c.AddRule(&nftables.Rule{Table: t, Chain: nat, Exprs: loopback})
	c.AddRule(&nftables.Rule{Table: t, Chain: nat, Exprs: []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_TCP}},
		&expr.Immediate{Register: 1, Data: be16(port)},
		&expr.Redir{RegisterProtoMin: 1},
	}})
	c.AddRule(&nftables.Rule{Table: t, Chain: nat, Exprs: []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.NFPROTO_IPV4}},
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_UDP}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: be16(dns)},
		&expr.Immediate{Register: 1, Data: be16(dnsPort)},
		&expr.Redir{RegisterProtoMin: 1},
	}})
	c.AddRule(&nftables.Rule{Table: t, Chain: out, Exprs: loopback})
	status := make([]byte, 4)
	binary.NativeEndian.PutUint32(status, 0x20) // IPS_DST_NAT
	c.AddRule(&nftables.Rule{Table: t, Chain: out, Exprs: []expr.Any{
		&expr.Ct{Register: 1, Key: expr.CtKeySTATUS},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: status, Xor: []byte{0, 0, 0, 0}},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: []byte{0, 0, 0, 0}},
		accept,
	}})
	if err := c.Flush(); err != nil {
		return fmt.Errorf("nftables: install the rules: %w", err)
	}
	return nil
}

// ifname is an interface name as nf_tables compares it: NUL-padded to
// IFNAMSIZ.
func ifname(s string) []byte {
	b := make([]byte, unix.IFNAMSIZ)
	copy(b, s)
	return b
}

func be16(v uint16) []byte {
	return binary.BigEndian.AppendUint16(nil, v)
}
