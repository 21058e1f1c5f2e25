// Command fleetgen is an open-loop load generator for a fleet of VMs polling the
// Scheduled Events endpoint, each from its own source address on its own keep-alive
// connection. It prints one JSON report on stdout.
//
//	fleetgen -target 127.0.0.1:8169 -vms vms.txt -seconds 30 [-rate 1]
//
// vms.txt has one VM per line: "ADDRESS NAME [approve]". A VM marked "approve" POSTs
// StartRequests for every Scheduled event that lists it.
//
// Standard library only: the benchmark builds it with "go build" and no network.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"
)

type config struct {
	target   string
	path     string
	request  []byte
	period   time.Duration
	timeout  time.Duration
	grace    time.Duration
	seconds  float64
	settle   time.Duration
	dialers  int
	memLimit int64
	seed     int64
}

func main() {
	cfg := &config{}
	vmsFile := flag.String("vms", "", "file of VMs: ADDRESS NAME [approve], one a line")
	flag.StringVar(&cfg.target, "target", "127.0.0.1:8169", "endpoint host:port")
	flag.StringVar(&cfg.path, "path", "/metadata/scheduledevents?api-version=2020-07-01", "request target")
	rate := flag.Float64("rate", 1.0, "polls per second per VM")
	flag.Float64Var(&cfg.seconds, "seconds", 30, "length of the measured window")
	flag.DurationVar(&cfg.timeout, "timeout", 5*time.Second, "per-request timeout")
	flag.DurationVar(&cfg.settle, "settle", time.Second, "pause between the last connect and the first poll")
	flag.IntVar(&cfg.dialers, "dialers", 256, "connections opened at once while connecting")
	flag.Int64Var(&cfg.memLimit, "mem-limit-mib", 2048, "heap limit; the GC runs only near it")
	flag.Int64Var(&cfg.seed, "seed", 1, "seed of the random phases")
	flag.Parse()
	if *vmsFile == "" || *rate <= 0 || cfg.seconds <= 0 {
		fmt.Fprintln(os.Stderr, "fleetgen: -vms FILE is required; -rate and -seconds must be positive")
		os.Exit(2)
	}
	// The GC stalls every goroutine; with a few hundred MB of live buffers it is cheaper
	// to let the heap grow up to a limit than to collect during the window.
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(cfg.memLimit << 20)
	cfg.period = time.Duration(float64(time.Second) / *rate)
	cfg.grace = cfg.timeout + time.Second
	cfg.request = []byte("GET " + cfg.path + " HTTP/1.1\r\nHost: 169.254.169.254\r\nMetadata: true\r\n\r\n")
	specs, err := readVMs(*vmsFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleetgen:", err)
		os.Exit(2)
	}
	os.Exit(run(cfg, specs))
}

func readVMs(path string) ([]vmSpec, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []vmSpec
	scanner := bufio.NewScanner(f)
	for line := 1; scanner.Scan(); line++ {
		fields := strings.Fields(scanner.Text())
		if len(fields) == 0 {
			continue
		}
		if len(fields) < 2 || len(fields) > 3 || (len(fields) == 3 && fields[2] != "approve") {
			return nil, fmt.Errorf("%s:%d: expected ADDRESS NAME [approve]", path, line)
		}
		out = append(out, vmSpec{address: fields[0], name: fields[1], approves: len(fields) == 3})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no VMs", path)
	}
	return out, scanner.Err()
}

func run(cfg *config, specs []vmSpec) int {
	expected := int(cfg.seconds*float64(time.Second)/float64(cfg.period)) + 2
	vms := make([]*vm, len(specs))
	for i, spec := range specs {
		vms[i] = newVM(spec, cfg, expected)
	}
	// Connect everyone first (bounded concurrency), so the window measures polls only.
	connectStart := time.Now()
	var wg sync.WaitGroup
	slots := make(chan struct{}, cfg.dialers)
	for _, v := range vms {
		wg.Add(1)
		slots <- struct{}{}
		go func(v *vm) {
			defer wg.Done()
			_ = v.dial() // a VM that cannot connect now retries at each of its polls
			<-slots
		}(v)
	}
	wg.Wait()
	connected := 0
	for _, v := range vms {
		if v.conn != nil {
			connected++
		}
	}
	connectSeconds := time.Since(connectStart).Seconds()
	runtime.GC() // start the window with a clean heap
	t0 := time.Now().Add(cfg.settle)
	end := t0.Add(time.Duration(cfg.seconds * float64(time.Second)))
	fmt.Fprintf(os.Stderr, "fleetgen: ready start=%.6f connected=%d/%d in %.1fs\n",
		float64(t0.UnixNano())/1e9, connected, len(vms), connectSeconds)
	rng := rand.New(rand.NewSource(cfg.seed))
	for _, v := range vms {
		phase := time.Duration(rng.Int63n(int64(cfg.period)))
		wg.Add(1)
		go func(v *vm) {
			defer wg.Done()
			v.run(t0, end, phase)
		}(v)
	}
	wg.Wait()
	elapsed := time.Since(t0).Seconds()
	// Only now: a VM that closed after its last poll put thousands of disconnects among
	// the other VMs' last polls (the servers' stalls in a window's last second).
	for _, v := range vms {
		v.drop()
	}
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	report := buildReport(cfg, vms, t0, elapsed, connected, connectSeconds, &mem)
	out, _ := json.Marshal(report)
	fmt.Println(string(out))
	return 0
}
