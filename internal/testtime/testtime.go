// Package testtime gives the tests their waits: how long a test may wait
// for an event before it fails. A wait is a limit on a poll or a channel
// receive that returns as soon as the event happens, never a sleep that
// guesses how long the event takes; the limits only decide how long a
// broken test hangs before it says so.
//
// Every limit is scaled by PROSE_TEST_TIMEOUT_SCALE (a positive number, 1
// when unset), so that a slow or loaded machine (CI on 2 cores shared with
// other builds, -race) can give every wait more room at once:
//
//	PROSE_TEST_TIMEOUT_SCALE=3 go test ./...
package testtime

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

// ScaleEnv is the environment variable that scales every limit.
const ScaleEnv = "PROSE_TEST_TIMEOUT_SCALE"

// Wait is the default limit of a wait for an event (before scaling): long
// enough for a machine with a load average of 40, short enough that a test
// waiting for something that never comes fails within the package's go
// test timeout.
const Wait = 60 * time.Second

var (
	scaleOnce sync.Once
	scale     float64
)

// Scale is PROSE_TEST_TIMEOUT_SCALE (1 when unset). A value that is not a
// positive number stops the test binary with a message naming it: a
// mistyped scale must not silently shorten the waits.
func Scale() float64 {
	scaleOnce.Do(func() {
		scale = 1
		v := os.Getenv(ScaleEnv)
		if v == "" {
			return
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f > 0) || f > 1000 {
			fmt.Fprintf(os.Stderr, "%s=%q: want a positive number up to 1000\n", ScaleEnv, v)
			os.Exit(2)
		}
		scale = f
	})
	return scale
}

// Limit is d scaled by PROSE_TEST_TIMEOUT_SCALE.
func Limit(d time.Duration) time.Duration {
	return time.Duration(float64(d) * Scale())
}

// Deadline is now plus Limit(d).
func Deadline(d time.Duration) time.Time {
	return time.Now().Add(Limit(d))
}

// TB is the part of testing.TB Until uses.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Until calls cond every few milliseconds until it reports true; after
// Limit(limit) it fails t with what cond last described. It returns at
// once when cond is true on the first call.
func Until(t TB, limit time.Duration, cond func() (ok bool, desc string)) {
	t.Helper()
	deadline := Deadline(limit)
	pause := time.Millisecond
	for {
		ok, desc := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %v (%s=%g): %s", Limit(limit), ScaleEnv, Scale(), desc)
		}
		time.Sleep(pause)
		if pause < 50*time.Millisecond {
			pause *= 2
		}
	}
}
