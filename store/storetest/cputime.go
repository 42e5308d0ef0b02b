package storetest

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// CPUMeter measures the CPU time a benchmark uses, in this process and in
// the database server's processes that serve it (PostgreSQL's backends),
// and reports them per op: on a machine shared with other work the wall
// time per op varies several-fold between runs, the CPU time much less.
// It reads /proc (Linux); elsewhere the server's time is 0.
type CPUMeter struct {
	pids         func() []int
	self, server time.Duration
}

// StartCPU starts a meter; pids lists the server's processes serving the
// benchmark (nil: none, an in-process database).
func StartCPU(pids func() []int) *CPUMeter {
	m := &CPUMeter{pids: pids}
	m.self, m.server = selfCPU(), m.serverCPU()
	return m
}

// Report reports the CPU time used since StartCPU per op of b.
func (m *CPUMeter) Report(b *testing.B) {
	self, server := selfCPU()-m.self, m.serverCPU()-m.server
	b.ReportMetric(float64(self.Nanoseconds())/float64(b.N), "cpu-ns/op")
	if m.pids != nil {
		b.ReportMetric(float64(server.Nanoseconds())/float64(b.N), "server-cpu-ns/op")
	}
}

func (m *CPUMeter) serverCPU() time.Duration {
	if m.pids == nil {
		return 0
	}
	var t time.Duration
	for _, pid := range m.pids() {
		t += procCPU(pid)
	}
	return t
}

// procCPU is the CPU time process pid has used (its utime and stime in
// /proc/pid/stat, in ticks of 10 ms).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:])) // from field 3, the state
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+s) * 10 * time.Millisecond
}
