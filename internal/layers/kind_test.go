package layers

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// kindPicker is the one Go file that asks whether a config has a sample
// block: config's registry of kinds (Config.Kind); loader/kind.go's
// registry maps its answer to the kinds' mixKind.
const kindPicker = "config/kind.go"

// sampleKind matches the name of a config.Kind value (config.KindSteps):
// comparing a config's Kind with one, or switching on it, picks a kind as
// a nil check on its block does.
var sampleKind = regexp.MustCompile(`^Kind[A-Z]`)

// isSampleKind reports whether e names a config.Kind value: config.KindX
// anywhere, KindX inside package config (rel is the file's path).
func isSampleKind(e ast.Expr, rel string) bool {
	switch e := e.(type) {
	case *ast.SelectorExpr:
		x, ok := e.X.(*ast.Ident)
		return ok && x.Name == "config" && sampleKind.MatchString(e.Sel.Name)
	case *ast.Ident:
		return strings.HasPrefix(rel, "config/") && sampleKind.MatchString(e.Name)
	}
	return false
}

// viewKindPicker is the web page's one file that asks which kind a mount
// serves, from its info.json (mountInfo.steps), as the Python package's
// _reader does.
const viewKindPicker = "view/mount.go"

// kindFields are the names whose comparison with nil picks a kind of
// sample: the config's sample block (Config.Steps, DatasetConfig.steps;
// Sample, as it was called, and as info.json's "sample" would be as a
// struct field) and the step samples' layout.
var kindFields = []string{"Steps", "steps", "Sample", "sample", "layout", "Layout"}

// pythonKindPicker is the one function of the Python package that looks at
// info.json's "sample" to pick a batch reader.
const pythonKindPicker = "def _reader("

// modeChecks returns, as file:line, every comparison of a kindField with
// nil, and every comparison with (or switch case of) a config.Kind value,
// in the module's Go code (tests left out) outside kindPicker.
func modeChecks(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	fset := token.NewFileSet()
	err := walkGoFiles(root, root, false, func(p, rel string) error {
		if rel == kindPicker || rel == viewKindPicker {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if c, ok := n.(*ast.CaseClause); ok {
				for _, e := range c.List {
					if isSampleKind(e, rel) {
						out = append(out, fmt.Sprintf("%s:%d: case %s", rel, fset.Position(e.Pos()).Line, exprText(e)))
					}
				}
				return true
			}
			b, ok := n.(*ast.BinaryExpr)
			if !ok || (b.Op != token.EQL && b.Op != token.NEQ) {
				return true
			}
			for _, pair := range [][2]ast.Expr{{b.X, b.Y}, {b.Y, b.X}} {
				if isNil(pair[1]) && slices.Contains(kindFields, lastName(pair[0])) {
					out = append(out, fmt.Sprintf("%s:%d: %s %s nil", rel, fset.Position(b.Pos()).Line, exprText(pair[0]), b.Op))
				}
				if isSampleKind(pair[1], rel) {
					out = append(out, fmt.Sprintf("%s:%d: … %s %s", rel, fset.Position(b.Pos()).Line, b.Op, exprText(pair[1])))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func isNil(e ast.Expr) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == "nil"
}

// lastName is the name an expression ends with: c.Steps → Sample.
func lastName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	}
	return ""
}

func exprText(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return exprText(e.X) + "." + e.Sel.Name
	}
	return "…"
}

// pythonSample matches a look at info.json's "sample" in Python.
var pythonSample = regexp.MustCompile(`\[\s*"sample"\s*\]|\.get\(\s*"sample"|"sample"\s+(not\s+)?in\b`)

// pythonModeChecks returns, as file:line, every look at info.json's
// "sample" in the Python package's files outside the body of
// pythonKindPicker and the step reader it picks (whose own section it
// reads).
func pythonModeChecks(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.py"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		inside := ""
		for i, line := range strings.Split(string(b), "\n") {
			switch {
			case strings.HasPrefix(line, pythonKindPicker), strings.HasPrefix(line, "class _StepReader"), strings.HasPrefix(line, "def _step_arrays("):
				inside = line
			case line != "" && !strings.HasPrefix(line, " ") && !strings.HasPrefix(line, "#"):
				inside = ""
			}
			if inside == "" && pythonSample.MatchString(line) {
				out = append(out, fmt.Sprintf("%s:%d: %s", filepath.Base(p), i+1, strings.TrimSpace(line)))
			}
		}
	}
	return out
}

// TestOneFactory: the kind of sample is picked in one place. No Go file
// but config/kind.go (config's registry of kinds) compares the config's
// sample block (or the step samples' layout) with nil, or a config.Kind
// with one of its values, to choose a code path (loader/kind.go's
// registry maps a Kind to its mixKind by table, comparing nothing), and
// no Python code but _reader looks at info.json's "sample" to choose a
// reader: everything else asks the kind (sample.Kind, loader's mixKind,
// config's KindRules, the reader _reader picked). A new check names its
// file and line.
func TestOneFactory(t *testing.T) {
	root := moduleRoot(t)
	if got := modeChecks(t, root); len(got) > 0 {
		t.Errorf("mode checks outside %s (ask the kind instead; see loader/kind.go):\n%s", kindPicker, strings.Join(got, "\n"))
	}
	if got := pythonModeChecks(t, filepath.Join(root, "python", "oxefs")); len(got) > 0 {
		t.Errorf("looks at info.json's \"sample\" outside _reader (python/oxefs/_batches.py):\n%s", strings.Join(got, "\n"))
	}
}

// TestOneFactoryCatches plants mode checks in a module tree and a Python
// package and checks that both checks report them, and nothing else.
func TestOneFactoryCatches(t *testing.T) {
	root := t.TempDir()
	write := planter(t, root)
	write("go.mod", "module "+module+"\n")
	write(kindPicker, "package config\n\nfunc pick(c *Config) bool { return c.Steps != nil }\n")
	write("loader/bad.go", "package loader\n\nfunc f(cfg *config.Config) int {\n\tif cfg.Steps == nil {\n\t\treturn 1\n\t}\n\treturn 0\n}\n")
	write("assemble/bad.go", "package assemble\n\nfunc (b *Builder) g() bool { return nil != b.layout }\n")
	write("bench/ok.go", "package bench\n\nfunc h(err error) bool { return err != nil }\n")
	write("bench/ok_test.go", "package bench\n\nfunc k(doc *D) bool { return doc.Sample == nil }\n")
	write("loader/kinds.go", "package loader\n\nvar m = map[config.Kind]int{config.KindSteps: 1}\n\nfunc s(cfg *config.Config) bool { return cfg.Kind() == config.KindSteps }\n")
	write("config/bad.go", "package config\n\nfunc (c *Config) p() int {\n\tswitch c.Kind() {\n\tcase KindPairs:\n\t\treturn 1\n\t}\n\treturn 0\n}\n")
	write("config/ok.go", "package config\n\nfunc (f Feature) image() bool { return f.Kind == episode.KindImage }\n")
	write("episode/ok.go", "package episode\n\nfunc (f Feature) image() bool { return f.Kind == KindImage }\n")
	got := modeChecks(t, root)
	want := []string{"assemble/bad.go:3: b.layout != nil", "config/bad.go:5: case KindPairs", "loader/bad.go:4: cfg.Steps == nil", "loader/kinds.go:5: … == config.KindSteps"}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("Go check reported\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	write("python/oxefs/_batches.py", `def _reader(info):
    if info.get("sample") is not None:
        return 1


class _StepReader:
    def __init__(self, info):
        self.slots = info["sample"]["slots"]


def read(info):
    if "sample" in info:
        return 2
    return info.get("frames")
`)
	got = pythonModeChecks(t, filepath.Join(root, "python", "oxefs"))
	if len(got) != 1 || !strings.HasPrefix(got[0], "_batches.py:12:") {
		t.Errorf("Python check reported %q, want one: _batches.py:12", got)
	}
}
