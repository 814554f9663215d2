package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// docFiles are the Markdown documents whose links are checked: the README
// and everything under docs/.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"README.md"}, files...)
}

// headingSlugs returns the anchors GitHub gives a document's headings:
// lower case, punctuation dropped (letters, digits, '-', '_' and spaces
// kept), spaces turned into '-', and "-1", "-2" ... on repeats. Lines in
// fenced code blocks are not headings.
func headingSlugs(doc string) map[string]bool {
	slugs := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimLeft(line, "#")
		if !strings.HasPrefix(text, " ") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(text)) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		slug := b.String()
		if n := seen[slug]; n > 0 {
			slugs[slug+"-"+strconv.Itoa(n)] = true
		} else {
			slugs[slug] = true
		}
		seen[slug]++
	}
	return slugs
}

var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestReadmeLinks: every link from the README and docs/*.md to a section
// (#anchor, or file.md#anchor) names a heading that exists, and every
// relative link names a file that exists, so moving a section cannot
// leave a dead link behind.
func TestReadmeLinks(t *testing.T) {
	docs := map[string]string{}
	for _, f := range docFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs[f] = string(b)
	}
	checked := 0
	for f, doc := range docs {
		fenced := false
		for i, line := range strings.Split(doc, "\n") {
			if strings.HasPrefix(line, "```") {
				fenced = !fenced
			}
			if fenced {
				continue
			}
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, anchor, _ := strings.Cut(target, "#")
				dest := f
				if path != "" {
					dest = filepath.Clean(filepath.Join(filepath.Dir(f), path))
					if _, err := os.Stat(dest); err != nil {
						t.Errorf("%s:%d: link %q: no file %s", f, i+1, target, dest)
						continue
					}
				}
				checked++
				if anchor == "" {
					continue
				}
				text, ok := docs[dest]
				if !ok {
					t.Errorf("%s:%d: link %q: anchors are checked only in README.md and docs/*.md", f, i+1, target)
					continue
				}
				if !headingSlugs(text)[anchor] {
					t.Errorf("%s:%d: link %q: %s has no heading with anchor #%s", f, i+1, target, dest, anchor)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no links found: the check would pass vacuously")
	}
}

// TestHeadingSlugs: the anchors GitHub gives headings with code spans,
// colons, non-ASCII letters and repeats.
func TestHeadingSlugs(t *testing.T) {
	doc := "# oxefs\n## Serving modes and `decode: fast`\n## Synthetic data: `oxefs synth`\n" +
		"```\n# not a heading\n```\n## Step samples against pairs and LeRobot\n### Notes\n### Notes\n## Über 2×\n"
	got := headingSlugs(doc)
	for _, want := range []string{"oxefs", "serving-modes-and-decode-fast", "synthetic-data-oxefs-synth",
		"step-samples-against-pairs-and-lerobot", "notes", "notes-1", "über-2"} {
		if !got[want] {
			t.Errorf("no slug %q in %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Error("a comment in a code block counted as a heading")
	}
}
