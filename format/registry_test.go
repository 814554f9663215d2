package format

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/storage"
)

// registryOf is a registry of fs, in order.
func registryOf(fs ...Format) *Registry {
	r := new(Registry)
	for _, f := range fs {
		r.Register(f)
	}
	return r
}

// fakeSource is a source named by its location; it holds nothing.
type fakeSource string

func (s fakeSource) Location() string { return string(s) }
func (s fakeSource) Stat(context.Context, string) (storage.ObjectInfo, error) {
	return storage.ObjectInfo{}, errors.New("not used")
}
func (s fakeSource) Open(context.Context, string, int64, int64) (io.ReadCloser, error) {
	return nil, errors.New("not used")
}

// fakeDataset is a dataset that says which format opened it.
type fakeDataset struct {
	Dataset
	format string
}

func (d *fakeDataset) FormatName() string { return d.format }

// fakeFormat is a Format that claims sources whose location has prefix (every
// source with prefix ""; none with a nil claims), and records its probes.
func fakeFormat(name string, claims func(loc string) bool, probed *[]string) Format {
	f := Format{
		Name: name,
		Open: func(_ context.Context, _ string, src storage.Backend, _ *Env) (Dataset, error) {
			return &fakeDataset{format: name}, nil
		},
	}
	if claims != nil {
		f.Probe = func(_ context.Context, src storage.Backend, _ *Env) (bool, error) {
			*probed = append(*probed, name)
			if src.Location() == "down" {
				return false, storage.Transient(errors.New("connection refused"))
			}
			return claims(src.Location()), nil
		}
	}
	return f
}

// TestOpenProbesInOrder: Open asks the formats in registration order and
// opens with the first that claims the source; the fallback (no probe)
// takes what none claims. A source the first probe could not ask ends the
// open with that error: no other probe waits out the same outage.
func TestOpenProbesInOrder(t *testing.T) {
	var probed []string
	r := registryOf(
		fakeFormat("A", func(loc string) bool { return strings.HasPrefix(loc, "a") }, &probed),
		fakeFormat("B", func(loc string) bool { return strings.HasPrefix(loc, "ab") || strings.HasPrefix(loc, "b") }, &probed),
		fakeFormat("Fallback", nil, nil),
	)
	for _, tc := range []struct {
		src, want string
		probed    []string
	}{
		{"ab", "A", []string{"A"}},     // A first, though B claims it too
		{"b", "B", []string{"A", "B"}}, // A says no
		{"c", "Fallback", []string{"A", "B"}},
		{"down", "", []string{"A"}}, // A could not ask: the open fails at once
	} {
		probed = nil
		d, err := r.Open(context.Background(), "", fakeSource(tc.src), &Env{})
		if tc.want == "" {
			if err == nil || !strings.Contains(err.Error(), "dataset down: looking for a A dataset: connection refused") || !slices.Equal(probed, tc.probed) {
				t.Errorf("%s: %v after probing %v; want the probe's error after %v", tc.src, err, probed, tc.probed)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := NameOf(d); got != tc.want || !slices.Equal(probed, tc.probed) {
			t.Errorf("%s: opened as %s after probing %v; want %s after %v", tc.src, got, probed, tc.want, tc.probed)
		}
	}
}

func TestOpenWithoutFallback(t *testing.T) {
	var probed []string
	r := registryOf(fakeFormat("A", func(string) bool { return false }, &probed))
	if _, err := r.Open(context.Background(), "", fakeSource("x"), &Env{}); err == nil || !strings.Contains(err.Error(), "(A)") {
		t.Fatalf("no format claims x: got %v, want an error naming the formats", err)
	}
	if _, err := new(Registry).Open(context.Background(), "", fakeSource("x"), &Env{}); err == nil || !strings.Contains(err.Error(), "format/formats") {
		t.Fatalf("no format registered: got %v, want an error saying what to import", err)
	}
}

func TestRegisterRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		fs   []Format
	}{
		{"twice", []Format{fakeFormat("A", func(string) bool { return true }, new([]string)), fakeFormat("A", nil, nil)}},
		{"after the fallback", []Format{fakeFormat("F", nil, nil), fakeFormat("A", func(string) bool { return true }, new([]string))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("Register did not panic")
				}
			}()
			registryOf(tc.fs...)
		})
	}
}

// TestMissingOffline: nothing is missing when one format has all it
// needs; otherwise the fallback's lack comes first, then the others'.
func TestMissingOffline(t *testing.T) {
	lacks := func(f Format, lack string) Format {
		f.MissingOffline = func(storage.Backend, *Env) string { return lack }
		return f
	}
	probe := func(string) bool { return false }
	r := registryOf(lacks(fakeFormat("LeRobot", probe, new([]string)), "its files"), lacks(fakeFormat("RLDS", nil, nil), "metadata features.json"))
	if got, want := r.MissingOffline(fakeSource("x"), &Env{}), "metadata features.json (or, for a LeRobot dataset, its files)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	r = registryOf(lacks(fakeFormat("LeRobot", probe, new([]string)), ""), lacks(fakeFormat("RLDS", nil, nil), "metadata features.json"))
	if got := r.MissingOffline(fakeSource("x"), &Env{}); got != "" {
		t.Errorf("LeRobot has what it needs: got %q, want nothing missing", got)
	}
}

// fetcher records what it was asked to fetch.
type fetcher struct {
	name string
	got  *[]string
}

func (f fetcher) FetchEpisodes(_ context.Context, refs []EpisodeRef) error {
	for _, r := range refs {
		*f.got = append(*f.got, f.name+":"+r.Key.Split)
	}
	return nil
}

func (f fetcher) Prefetch(_ context.Context, refs []ShardRef, _ int, _ func()) (int, error) {
	for _, r := range refs {
		*f.got = append(*f.got, f.name+":"+r.Split)
	}
	return len(refs), nil
}

func (f fetcher) ShardCached(ShardRef) (bool, error) { return false, nil }

type fetched struct {
	Dataset
	f Fetcher
}

func (d *fetched) Fetcher() Fetcher { return d.f }

// TestFetchGroupsByFetcher: refs go to their datasets' fetchers, one call
// each with its refs in order; datasets without one are left out.
func TestFetchGroupsByFetcher(t *testing.T) {
	var got []string
	a, b := fetcher{"a", &got}, fetcher{"b", &got}
	da1, da2, db, plain := &fetched{f: a}, &fetched{f: a}, &fetched{f: b}, &fakeDataset{}
	eps := []EpisodeRef{{da1, episode.Key{Split: "1"}}, {plain, episode.Key{Split: "x"}}, {db, episode.Key{Split: "2"}}, {da2, episode.Key{Split: "3"}}}
	if err := FetchEpisodes(context.Background(), eps); err != nil {
		t.Fatal(err)
	}
	if want := []string{"a:1", "a:3", "b:2"}; !slices.Equal(got, want) {
		t.Errorf("FetchEpisodes: %v, want %v", got, want)
	}
	got = nil
	n, err := Prefetch(context.Background(), []ShardRef{{db, "1", 0}, {da1, "2", 0}, {plain, "x", 0}, {db, "3", 0}}, 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"b:1", "b:3", "a:2"}; n != 3 || !slices.Equal(got, want) {
		t.Errorf("Prefetch: %d, %v; want 3, %v", n, got, want)
	}
}
