package main

import (
	"bytes"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"
)

// watchFlags are --watch and --interval of the list commands: print the
// list, then again each time it changes, until Ctrl-C (exit 0).
type watchFlags struct {
	watch    bool
	interval time.Duration
}

func (w *watchFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&w.watch, "watch", false, "print the list again each time it changes, until Ctrl-C")
	cmd.Flags().DurationVar(&w.interval, "interval", 2*time.Second, "with --watch: how often to ask the server")
}

// loop prints what produce renders, once, or with --watch each time it
// differs from the last print, asking again every interval. Being
// interrupted is how a watch ends, so it is a success.
func (w *watchFlags) loop(cmd *cobra.Command, s *session, produce func() (string, error)) error {
	ctx := cmd.Context()
	if w.watch && w.interval <= 0 {
		return usageErr("--interval must be positive")
	}
	last := ""
	for {
		text, err := produce()
		if err != nil {
			if w.watch && ctx.Err() != nil {
				return nil //nolint:nilerr // a call cut short by Ctrl-C is how a watch ends
			}
			return err
		}
		if text != last || !w.watch {
			if w.watch && last != "" && !s.json {
				fmt.Fprintf(s.out, "\n%s\n", time.Now().Format(time.TimeOnly))
			}
			fmt.Fprint(s.out, text)
			last = text
		}
		if !w.watch {
			return nil
		}
		t := time.NewTimer(w.interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// render is printList into a string, for loop to compare.
func (s *session) render(resp proto.Message, header []string, rows [][]string) (string, error) {
	var buf bytes.Buffer
	out := s.out
	s.out = &buf
	defer func() { s.out = out }()
	err := s.printList(resp, header, rows)
	return buf.String(), err
}
