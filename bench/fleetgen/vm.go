package main

// One virtual VM: its own source address, its own keep-alive connection, polling on a
// fixed schedule. Latency counts from the scheduled send time, so a slow answer delays
// the VM's next poll without hiding it (no coordinated omission).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// Error kinds, in the order they are reported.
const (
	errConnect = iota
	errWrite
	errRead
	errTimeout
	errProtocol
	errClosed
	errUnsent
	errKinds
)

var errNames = [errKinds]string{"connect", "write", "read", "timeout", "protocol", "closed", "unsent"}

// sample is one answered poll: when it was due (ms after the start) and how long it took.
type sample struct {
	dueMs     int32
	latencyUs int32
	lagUs     int32 // the generator's own lateness in sending it (see lagsUs)
	answerUs  int32 // from its send to its answer
}

type vmSpec struct {
	address  string
	name     string
	approves bool
}

// vm holds everything one VM records; only its own goroutine touches it until the end.
type vm struct {
	spec     vmSpec
	cfg      *config
	conn     net.Conn
	reader   *responseReader
	samples  []sample
	lagsUs   []int32
	errors   [errKinds]int
	statuses map[int]int
	ok200    int
	// approvals
	approved      map[string]bool
	approveLatUs  []int32
	approveStatus map[int]int
	approveErrors int
}

func newVM(spec vmSpec, cfg *config, expected int) *vm {
	v := &vm{
		spec:     spec,
		cfg:      cfg,
		samples:  make([]sample, 0, expected),
		lagsUs:   make([]int32, 0, expected),
		statuses: map[int]int{},
	}
	if spec.approves {
		v.approved = map[string]bool{}
		v.approveStatus = map[int]int{}
	}
	return v
}

func (v *vm) dial() error {
	ip := net.ParseIP(v.spec.address)
	if ip == nil {
		return fmt.Errorf("bad address %q", v.spec.address)
	}
	dialer := net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}, Timeout: v.cfg.timeout}
	conn, err := dialer.Dial("tcp", v.cfg.target)
	if err != nil {
		return err
	}
	v.conn = conn
	v.reader = newResponseReader(conn)
	return nil
}

func (v *vm) drop() {
	if v.conn != nil {
		v.conn.Close()
		v.conn = nil
	}
}

// exchange sends one request and reads its answer; on failure the connection is dropped.
func (v *vm) exchange(request []byte) (response, int) {
	if v.conn == nil {
		if err := v.dial(); err != nil {
			return response{}, errConnect
		}
	}
	v.conn.SetDeadline(time.Now().Add(v.cfg.timeout))
	if _, err := v.conn.Write(request); err != nil {
		v.drop()
		return response{}, errWrite
	}
	resp, err := v.reader.read()
	if err != nil {
		v.drop()
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			return resp, errTimeout
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return resp, errClosed
		}
		if err == errStatusLine || err == errHeader || err == errNoLength ||
			err == errChunked || err == errHeaderLarge {
			return resp, errProtocol
		}
		return resp, errRead
	}
	if resp.close {
		v.drop()
	}
	return resp, -1
}

// run polls from t0+phase every period until end; late polls are still sent (and counted
// late) until end+grace, after which what is left is counted as unsent.
func (v *vm) run(t0, end time.Time, phase time.Duration) {
	period := v.cfg.period
	hardStop := end.Add(v.cfg.grace)
	freeAt := t0
	for k := 0; ; k++ {
		due := t0.Add(phase + time.Duration(k)*period)
		if !due.Before(end) {
			break
		}
		now := time.Now()
		if now.After(hardStop) {
			v.errors[errUnsent]++
			continue
		}
		if wait := due.Sub(now); wait > 0 {
			time.Sleep(wait)
			now = time.Now()
		}
		// The generator's own lateness: how long after the VM was free to send (its
		// schedule, or its previous answer if that came later) the request left.
		ready := due
		if freeAt.After(ready) {
			ready = freeAt
		}
		v.lagsUs = append(v.lagsUs, int32(now.Sub(ready)/time.Microsecond))
		resp, kind := v.exchange(v.cfg.request)
		done := time.Now()
		freeAt = done
		if kind >= 0 {
			v.errors[kind]++
			continue
		}
		if resp.status == 200 {
			v.ok200++
		} else {
			v.statuses[resp.status]++
		}
		latency := done.Sub(due) / time.Microsecond
		v.samples = append(v.samples, sample{
			dueMs: int32(due.Sub(t0) / time.Millisecond), latencyUs: clamp32(int64(latency)),
			lagUs:    clamp32(int64(now.Sub(ready) / time.Microsecond)),
			answerUs: clamp32(int64(done.Sub(now) / time.Microsecond)),
		})
		if v.spec.approves && resp.status == 200 && bytes.Contains(resp.body, []byte(`"EventId"`)) {
			v.approve(resp.body)
			freeAt = time.Now()
		}
	}
	// The connection stays open: the generator closes every VM's once all are done.
}

type document struct {
	Events []struct {
		EventId     string
		EventStatus string
		Resources   []string
	}
}

// approve POSTs StartRequests for every Scheduled event that lists this VM and that it
// has not approved yet (as an application that drained itself would).
func (v *vm) approve(body []byte) {
	var doc document
	if err := json.Unmarshal(body, &doc); err != nil {
		v.approveErrors++
		return
	}
	for _, event := range doc.Events {
		if event.EventStatus != "Scheduled" || v.approved[event.EventId] {
			continue
		}
		listed := false
		for _, r := range event.Resources {
			if r == v.spec.name {
				listed = true
				break
			}
		}
		if !listed {
			continue
		}
		v.approved[event.EventId] = true
		payload := `{"StartRequests":[{"EventId":"` + event.EventId + `"}]}`
		request := []byte("POST " + v.cfg.path + " HTTP/1.1\r\nHost: 169.254.169.254\r\n" +
			"Metadata: true\r\nContent-Type: application/json\r\nContent-Length: " +
			strconv.Itoa(len(payload)) + "\r\n\r\n" + payload)
		sent := time.Now()
		resp, kind := v.exchange(request)
		if kind >= 0 {
			v.approveErrors++
			continue
		}
		v.approveStatus[resp.status]++
		v.approveLatUs = append(v.approveLatUs, clamp32(int64(time.Since(sent)/time.Microsecond)))
	}
}

func clamp32(x int64) int32 {
	if x > 1<<31-1 {
		return 1<<31 - 1
	}
	if x < 0 {
		return 0
	}
	return int32(x)
}
