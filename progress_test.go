package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestLineProgress(t *testing.T) {
	t.Run("a line per update when due", func(t *testing.T) {
		var buf bytes.Buffer
		p := newLineProgress(&buf, 10, "fetching shards", "shards", 0)
		p.Add(3)
		p.Set64(7)
		p.Finish()
		p.Finish()
		p.Add(1) // after Finish: nothing more
		lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
		want := []*regexp.Regexp{
			regexp.MustCompile(`^fetching shards: 3/10 shards in [0-9.]+m?s$`),
			regexp.MustCompile(`^fetching shards: 7/10 shards in [0-9.]+m?s$`),
			regexp.MustCompile(`^fetching shards: 7/10 shards in [0-9.]+m?s$`),
		}
		if len(lines) != len(want) {
			t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), buf.String())
		}
		for i, re := range want {
			if !re.MatchString(lines[i]) {
				t.Errorf("line %d = %q, want %v", i, lines[i], re)
			}
		}
	})
	t.Run("only the last line when none is due", func(t *testing.T) {
		var buf bytes.Buffer
		p := newLineProgress(&buf, 4, "synth: 1 datasets", "episodes", time.Hour)
		for range 4 {
			p.Add(1)
		}
		p.Finish()
		if got := buf.String(); !strings.HasPrefix(got, "synth: 1 datasets: 4/4 episodes in ") || strings.Count(got, "\n") != 1 {
			t.Fatalf("output %q, want one final line", got)
		}
	})
}
