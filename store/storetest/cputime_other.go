//go:build !unix

package storetest

import "time"

// selfCPU is 0 where getrusage is not available.
func selfCPU() time.Duration { return 0 }
