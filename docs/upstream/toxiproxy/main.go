// Command removetoxic-hang: toxiproxy 2.5.0's RemoveToxic blocks 5 s for
// every chunk a latency toxic holds once the link's writer has exited
// (the connection's far end left during the cut), all of it holding the
// proxy's toxic-collection lock (toxic_collection.go 171).
//
// link.go 238-271 hands each held chunk on with WriteOutput(tmp, 5s);
// link.go 137-170 (ToxicLink.write) stops reading once its io.Copy to the
// destination fails. See docs/upstream/toxiproxy-removetoxic-hang.md.
//
//	go run . ; echo "exit status $?"        # 5 trials, 3 s each: BUG, exit 1
//	go run . -trials 1 -wait 150s           # measured: 1m30s for 20 chunks
//
// Exits 1 when a removal did not return within -wait, 0 otherwise.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

func main() {
	chunks := flag.Int("chunks", 20, "chunks the client sends while the toxic holds them")
	trials := flag.Int("trials", 5, "connections tried, each through a new proxy")
	wait := flag.Duration("wait", 3*time.Second, "how long to wait for each RemoveToxic")
	flag.Parse()
	blocked := 0
	for t := 0; t < *trials; t++ {
		d, stuck, err := trial(*chunks, *wait)
		if err != nil {
			fmt.Println(err)
			os.Exit(2)
		}
		if stuck == "" {
			fmt.Printf("trial %d: both RemoveToxic calls returned in %v\n", t, d.Round(time.Millisecond))
		} else {
			blocked++
			fmt.Printf("trial %d: RemoveToxic(%q) still blocked after %v, holding the proxy's toxic-collection lock\n", t, stuck, *wait)
		}
	}
	if blocked > 0 {
		fmt.Printf("BUG: %d of %d RemoveToxic calls did not return in %v\n", blocked, *trials, *wait)
		os.Exit(1)
	}
	fmt.Println("no bug seen")
}

// trial runs one connection through a new proxy. A partition is laid as
// the locksim harness laid it before its fix: a latency toxic that holds
// every chunk (10 s) on each stream. Both ends send during the cut, then
// the server closes its end (a ZooKeeper member closes the election
// connection a lower-id peer opened), and the partition is healed by
// removing the two toxics, each awaited for at most wait.
func trial(chunks int, wait time.Duration) (time.Duration, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, "", err
	}
	defer ln.Close()
	api := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	p := toxiproxy.NewProxy(api, "repro", "127.0.0.1:0", ln.Addr().String())
	if err := p.Start(); err != nil {
		return 0, "", err
	}
	c, err := net.Dial("tcp", p.Listen)
	if err != nil {
		return 0, "", err
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		return 0, "", err
	}
	go io.Copy(io.Discard, s)
	go io.Copy(io.Discard, c)
	for _, stream := range []string{"upstream", "downstream"} {
		_, err = p.Toxics.AddToxicJson(bytes.NewReader([]byte(fmt.Sprintf(
			`{"name":"cut-%s","type":"latency","stream":"%s","toxicity":1,"attributes":{"latency":10000}}`, stream, stream))))
		if err != nil {
			return 0, "", err
		}
	}
	for i := 0; i < chunks; i++ { // both ends send during the cut
		c.Write([]byte(fmt.Sprintf("held %d\n", i)))
		s.Write([]byte(fmt.Sprintf("held %d\n", i)))
		time.Sleep(time.Millisecond)
	}
	s.Close() // the server leaves during the cut
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	for _, stream := range []string{"upstream", "downstream"} { // the heal
		done := make(chan error, 1)
		go func() { done <- p.Toxics.RemoveToxic(context.Background(), "cut-"+stream) }()
		select {
		case <-done:
		case <-time.After(wait):
			return wait, "cut-" + stream, nil
		}
	}
	return time.Since(start), "", nil
}
