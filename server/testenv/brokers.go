package testenv

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/proserun/prose/internal/testtime"
)

// Broker is a message broker of a test's own: a nats-server (JetStream
// on) or a mosquitto child process on a free loopback port, with its store
// in a temporary directory, stopped when the test ends. Restart stops it
// (SIGTERM: it saves its state) and starts it again on the same port and
// store, as an operator restarting a broker would.
type Broker struct {
	// URL is the broker's address (nats://… or tcp://…).
	URL  string
	Addr string
	name string
	args []string
	cmd  *exec.Cmd
	done chan struct{}
	log  *SyncBuffer
}

// brokerBinary finds a broker's binary (Debian puts them in /usr/sbin,
// not always on PATH); without it the test is skipped, saying so (.ci/run
// installs them, so CI never skips).
func brokerBinary(t *testing.T, name string) string {
	t.Helper()
	SkipTierIfOff(t, "PROSE_TEST_BROKERS")
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if p := "/usr/sbin/" + name; fileExists(p) {
		return p
	}
	t.Skipf("%s is not installed (apt-get install %s; .ci/run installs it)", name, strings.TrimSuffix(name, "-server"))
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// freePort is a loopback port nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// StartNATS starts a nats-server with JetStream (its store in a
// temporary directory) on a free port.
func StartNATS(t *testing.T) *Broker {
	t.Helper()
	bin := brokerBinary(t, "nats-server")
	addr := freePort(t)
	host, port, _ := net.SplitHostPort(addr)
	b := &Broker{URL: "nats://" + addr, Addr: addr, name: bin, args: []string{"-a", host, "-p", port, "-js", "-sd", t.TempDir()}}
	b.start(t)
	t.Cleanup(b.stop)
	return b
}

// StartMosquitto starts a mosquitto (persistence on, in a temporary
// directory) on a free port; conf lines are added to its configuration
// (such as "max_queued_messages 0").
func StartMosquitto(t *testing.T, conf ...string) *Broker {
	t.Helper()
	bin := brokerBinary(t, "mosquitto")
	addr := freePort(t)
	host, port, _ := net.SplitHostPort(addr)
	dir := t.TempDir()
	lines := append([]string{"listener " + port + " " + host, "allow_anonymous true", "persistence true",
		"persistence_location " + dir + "/", "log_dest stderr"}, conf...)
	if os.Geteuid() == 0 {
		// Run as root, mosquitto becomes the user mosquitto, who may not
		// write its store in the test's directory.
		lines = append(lines, "user root")
	}
	path := filepath.Join(dir, "mosquitto.conf")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := &Broker{URL: "tcp://" + addr, Addr: addr, name: bin, args: []string{"-c", path}}
	b.start(t)
	t.Cleanup(b.stop)
	return b
}

// start runs the broker and waits until it accepts connections.
func (b *Broker) start(t *testing.T) {
	t.Helper()
	b.log = &SyncBuffer{}
	b.cmd = exec.Command(b.name, b.args...) //nolint:gosec // a broker binary found by brokerBinary, with the test's arguments
	b.cmd.Stdout, b.cmd.Stderr = b.log, b.log
	if err := b.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", b.name, err)
	}
	b.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(b.cmd, b.done)
	deadline := testtime.Deadline(testtime.Wait)
	for {
		c, err := net.DialTimeout("tcp", b.Addr, time.Second)
		if err == nil {
			_ = c.Close()
			return
		}
		select {
		case <-b.done:
			t.Fatalf("%s exited: %s", b.name, b.log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not answer on %s: %v\n%s", b.name, b.Addr, err, b.log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop stops the broker (SIGTERM, then SIGKILL if it lingers) and waits
// for it to exit.
func (b *Broker) Stop(t *testing.T) {
	t.Helper()
	b.stop()
}

func (b *Broker) stop() {
	if b.cmd == nil || b.cmd.Process == nil {
		return
	}
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.done:
	case <-time.After(testtime.Limit(10 * time.Second)):
		_ = b.cmd.Process.Kill()
		<-b.done
	}
}

// Start starts a stopped broker again, on its port and store.
func (b *Broker) Start(t *testing.T) { t.Helper(); b.start(t) }

// Restart is Stop, then Start.
func (b *Broker) Restart(t *testing.T) {
	t.Helper()
	b.Stop(t)
	b.Start(t)
}

// Log is what the broker wrote since it last started.
func (b *Broker) Log() string { return b.log.String() }
