package zktest

// Retarget makes the connections accepted from now on go to target (a
// "host:port" of the same kind, plain or TLS, as the first one), as a
// load balancer's or a DNS name's address moves to a server that replaced
// another. Current connections keep going where they went; Cut ends them.
func (p *Proxy) Retarget(target string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = target
}

// targetAddr returns the address new connections go to.
func (p *Proxy) targetAddr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.target
}
