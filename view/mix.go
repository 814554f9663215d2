package view

import (
	"encoding/json"
	"net/url"
	"regexp"
	"sort"
	"strings"
)

// mixView is what /api/mix returns: each dataset's target and realised
// share, its samples and substitutions, and the val view.
type mixView struct {
	Rank       int          `json:"rank"`
	Ranks      []int        `json:"ranks,omitempty"`
	World      int          `json:"world"`
	Mode       string       `json:"mode"`
	BatchSize  int          `json:"batch_size"`
	NumBatches int64        `json:"num_batches"`
	Train      *mixViewPart `json:"train"`
	Val        *mixViewPart `json:"val"`
}

// mixViewPart is one view's datasets.
type mixViewPart struct {
	NumBatches int64 `json:"num_batches"`
	// Samples is the samples of every batch built so far (readahead
	// included), the denominator of each share.
	Samples       int64            `json:"samples"`
	Datasets      []mixDataset     `json:"datasets"`
	Substitutions map[string]int64 `json:"substitutions"`
}

type mixDataset struct {
	// What the plan says of the dataset, as info.json has it (the source
	// with any credentials taken out).
	planDataset
	// Samples served from this dataset so far and their share of all.
	Samples int64   `json:"samples"`
	Share   float64 `json:"share"`
	// Bad are this dataset's episodes that were substituted, with why.
	Bad      []badEpisode `json:"bad"`
	Unusable string       `json:"unusable,omitempty"`
}

func (m *Mount) readMix(r rankDir) (*mixView, error) {
	st, _, err := m.stats(r)
	if err != nil {
		return nil, err
	}
	mv := &mixView{Rank: r.Rank, Ranks: r.info.Ranks, World: r.info.World, BatchSize: r.info.BatchSize, NumBatches: r.info.NumBatches, Mode: "pairs"}
	if _, steps := r.info.steps(); steps {
		mv.Mode = "steps"
	}
	mv.Train = mixPart(r.info.Train, st.SamplesPerDataset, st.Substitutions, st.BadEpisodes, st.UnusableDatasets)
	if r.info.Val != nil {
		mv.Val = mixPart(r.info.Val, st.ValSamplesPerDataset, st.ValSubstitutions, st.ValBadEpisodes, nil)
	}
	return mv, nil
}

func mixPart(vi *viewInfo, samples, subs map[string]int64, bad []badEpisode, unusable map[string]string) *mixViewPart {
	if vi == nil {
		return nil
	}
	p := &mixViewPart{NumBatches: vi.NumBatches, Substitutions: subs}
	if p.Substitutions == nil {
		p.Substitutions = map[string]int64{}
	}
	for _, d := range vi.Plan.Datasets {
		p.Samples += samples[d.Name]
	}
	for _, d := range vi.Plan.Datasets {
		md := mixDataset{planDataset: d, Samples: samples[d.Name], Unusable: unusable[d.Name], Bad: []badEpisode{}}
		md.Source = redactURL(d.Source)
		if p.Samples > 0 {
			md.Share = float64(md.Samples) / float64(p.Samples)
		}
		for _, b := range bad {
			if strings.HasPrefix(b.Episode, d.Name+"/") {
				md.Bad = append(md.Bad, b)
			}
		}
		p.Datasets = append(p.Datasets, md)
	}
	return p
}

// secretKey is a JSON key whose value the page never gets.
var secretKey = regexp.MustCompile(`(?i)token|secret|password|passwd|credential|authorization|api_?key|access_?key|session`)

// redactJSON removes what could carry a private source's credentials from
// a JSON document of the mount: values under keys that name a secret,
// and the user info and query of every URL-like string (a presigned URL,
// https://user:token@host/...).
func redactJSON(b []byte) ([]byte, error) {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	return json.Marshal(redactValue(v))
}

func redactValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if secretKey.MatchString(k) {
				x[k] = "(redacted)"
				continue
			}
			x[k] = redactValue(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = redactValue(e)
		}
		return x
	case string:
		return redactURL(x)
	}
	return v
}

// redactURL strips the user info and the query of a URL-like string; any
// other string is returned as it is.
func redactURL(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	u, err := url.Parse(s)
	if err != nil {
		return "(redacted URL)"
	}
	if u.User == nil && u.RawQuery == "" && u.Fragment == "" {
		return s
	}
	u.User = nil
	if u.RawQuery != "" {
		q := u.Query()
		keys := make([]string, 0, len(q))
		for k := range q {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		u.RawQuery = ""
		for _, k := range keys {
			if secretKey.MatchString(k) || strings.HasPrefix(strings.ToLower(k), "x-amz-") || strings.HasPrefix(strings.ToLower(k), "x-goog-") {
				continue
			}
			u.RawQuery += url.QueryEscape(k) + "=" + url.QueryEscape(q.Get(k)) + "&"
		}
		u.RawQuery = strings.TrimSuffix(u.RawQuery, "&")
	}
	u.Fragment = ""
	return u.String()
}
