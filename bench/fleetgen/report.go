package main

// The JSON report: exact percentiles from every sample (a few hundred thousand fit easily).

import (
	"runtime"
	"sort"
	"strconv"
	"time"
)

type summary struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	P999  float64 `json:"p99_9_ms"`
	Max   float64 `json:"max_ms"`
	Mean  float64 `json:"mean_ms"`
}

type second struct {
	Second   int     `json:"second"`
	Requests int     `json:"requests"`
	P99      float64 `json:"p99_ms"`
	Max      float64 `json:"max_ms"`
}

// stall is a moment when many polls finished late together: the server stopped answering
// from about At (ms into the window) for about Ms.
type stall struct {
	At       int     `json:"at_ms"`
	Ms       float64 `json:"ms"`
	Requests int     `json:"requests"`
	// The generator's own longest lateness in sending one of its polls (not counting a
	// wait for the VM's previous answer), and the longest time from a send to its answer.
	LagMs    float64 `json:"lag_ms"`
	AnswerMs float64 `json:"answer_ms"`
}

type approvals struct {
	Sent     int            `json:"sent"`
	Errors   int            `json:"errors"`
	Statuses map[string]int `json:"statuses"`
	Latency  summary        `json:"latency"`
}

type report struct {
	VMs            int            `json:"vms"`
	Connected      int            `json:"connected"`
	ConnectSeconds float64        `json:"connect_seconds"`
	Seconds        float64        `json:"seconds"`
	Elapsed        float64        `json:"elapsed_seconds"`
	Start          float64        `json:"start_unix"`
	RatePerVM      float64        `json:"rate_per_vm"`
	Offered        int            `json:"offered"`
	Requests       int            `json:"requests"`
	OfferedRate    float64        `json:"offered_rate"`
	AchievedRate   float64        `json:"achieved_rate"`
	Errors         map[string]int `json:"errors"`
	ErrorTotal     int            `json:"error_total"`
	Statuses       map[string]int `json:"statuses"`
	Latency        summary        `json:"latency"`
	SendLag        summary        `json:"send_lag"`
	LateSends      map[string]int `json:"late_sends"`
	WorstSeconds   []second       `json:"worst_seconds"`
	Stalls         []stall        `json:"stalls"`
	Approvals      approvals      `json:"approvals"`
	GC             map[string]any `json:"gc"`
}

func summarise(us []int32) summary {
	if len(us) == 0 {
		return summary{}
	}
	sort.Slice(us, func(i, j int) bool { return us[i] < us[j] })
	pick := func(q float64) float64 {
		rank := int(q*float64(len(us))+0.999999) - 1 // nearest rank
		if rank < 0 {
			rank = 0
		}
		if rank >= len(us) {
			rank = len(us) - 1
		}
		return float64(us[rank]) / 1000
	}
	total := 0.0
	for _, x := range us {
		total += float64(x)
	}
	return summary{
		Count: len(us), P50: pick(0.5), P90: pick(0.9), P99: pick(0.99), P999: pick(0.999),
		Max: float64(us[len(us)-1]) / 1000, Mean: total / float64(len(us)) / 1000,
	}
}

func buildReport(cfg *config, vms []*vm, t0 time.Time, elapsed float64, connected int,
	connectSeconds float64, mem *runtime.MemStats) report {
	var latencies, lags, approveLat []int32
	var slow []sample
	perSecond := map[int][]int32{}
	errs := map[string]int{}
	statuses := map[string]int{}
	appr := approvals{Statuses: map[string]int{}}
	errTotal := 0
	for _, v := range vms {
		for _, s := range v.samples {
			latencies = append(latencies, s.latencyUs)
			if s.latencyUs >= stallUs {
				slow = append(slow, s)
			}
			sec := int(s.dueMs / 1000)
			perSecond[sec] = append(perSecond[sec], s.latencyUs)
		}
		lags = append(lags, v.lagsUs...)
		for kind, n := range v.errors {
			if n > 0 {
				errs[errNames[kind]] += n
				errTotal += n
			}
		}
		if v.ok200 > 0 {
			statuses["200"] += v.ok200
		}
		for status, n := range v.statuses {
			statuses[strconv.Itoa(status)] += n
		}
		approveLat = append(approveLat, v.approveLatUs...)
		appr.Errors += v.approveErrors
		for status, n := range v.approveStatus {
			appr.Statuses[strconv.Itoa(status)] += n
			appr.Sent += n
		}
	}
	appr.Sent += appr.Errors
	appr.Latency = summarise(approveLat)
	late := map[string]int{"over_1ms": 0, "over_5ms": 0, "over_20ms": 0}
	for _, lag := range lags {
		if lag > 1000 {
			late["over_1ms"]++
		}
		if lag > 5000 {
			late["over_5ms"]++
		}
		if lag > 20000 {
			late["over_20ms"]++
		}
	}
	seconds := []second{} // never null in the JSON
	for sec, xs := range perSecond {
		s := summarise(xs)
		seconds = append(seconds, second{Second: sec, Requests: s.Count, P99: s.P99, Max: s.Max})
	}
	sort.Slice(seconds, func(i, j int) bool { return seconds[i].Max > seconds[j].Max })
	if len(seconds) > 10 {
		seconds = seconds[:10]
	}
	perVM := float64(time.Second) / float64(cfg.period)
	offered := 0
	for _, v := range vms {
		offered += len(v.samples)
		for _, n := range v.errors {
			offered += n
		}
	}
	lat := summarise(latencies)
	var pauseMax uint64
	for _, p := range mem.PauseNs {
		if p > pauseMax {
			pauseMax = p
		}
	}
	return report{
		VMs: len(vms), Connected: connected, ConnectSeconds: connectSeconds,
		Seconds: cfg.seconds, Elapsed: elapsed, Start: float64(t0.UnixNano()) / 1e9,
		RatePerVM: perVM, Offered: offered, Requests: lat.Count,
		OfferedRate:  float64(len(vms)) * perVM,
		AchievedRate: float64(lat.Count) / cfg.seconds,
		Errors:       errs, ErrorTotal: errTotal, Statuses: statuses,
		Latency: lat, SendLag: summarise(lags), LateSends: late, WorstSeconds: seconds,
		Approvals: appr, Stalls: stalls(slow),
		GC: map[string]any{
			"num_gc": mem.NumGC, "pause_total_ms": float64(mem.PauseTotalNs) / 1e6,
			"pause_max_ms": float64(pauseMax) / 1e6, "heap_alloc_mib": mem.HeapAlloc >> 20,
		},
	}
}

// stallUs is the latency from which a poll counts as delayed by a stall.
const stallUs = 10000

// stalls groups slow polls by when they finished (within 10 ms of each other): each group
// is one stop of the server. The ten longest, longest first.
func stalls(slow []sample) []stall {
	done := func(s sample) int64 { return int64(s.dueMs)*1000 + int64(s.latencyUs) }
	sort.Slice(slow, func(i, j int) bool { return done(slow[i]) < done(slow[j]) })
	out := []stall{}
	for i := 0; i < len(slow); {
		j, first, worst := i, int(slow[i].dueMs), slow[i].latencyUs
		lag, answer := slow[i].lagUs, slow[i].answerUs
		for j+1 < len(slow) && done(slow[j+1])-done(slow[j]) < stallUs {
			j++
			if int(slow[j].dueMs) < first {
				first = int(slow[j].dueMs)
			}
			if slow[j].latencyUs > worst {
				worst = slow[j].latencyUs
			}
			if slow[j].lagUs > lag {
				lag = slow[j].lagUs
			}
			if slow[j].answerUs > answer {
				answer = slow[j].answerUs
			}
		}
		out = append(out, stall{At: first, Ms: float64(worst) / 1000, Requests: j - i + 1,
			LagMs: float64(lag) / 1000, AnswerMs: float64(answer) / 1000})
		i = j + 1
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Ms > out[j].Ms })
	if len(out) > 10 {
		out = out[:10]
	}
	return out
}
