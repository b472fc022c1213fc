package recipeargs

import (
	"net"
	"sync"
)

// LocalIP returns this host's first non-loopback IPv4 address as text, else
// "127.0.0.1": what Curator stores in the nodes it creates when it is given
// no data (CuratorFrameworkFactory's default data is the local address).
var LocalIP = sync.OnceValue(func() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "127.0.0.1"
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
			return ipn.IP.String()
		}
	}
	return "127.0.0.1"
})
