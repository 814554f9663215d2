package layers

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/oxefs/oxefs"

// layer places each package; a package may import only packages of a lower
// layer, and of its own layer only along the edges of sideways. A path
// ending in "/..." covers the packages below it.
var layer = map[string]int{
	"storage":     0,
	"storage/...": 0,

	"episode":           1,
	"episode/splitspec": 1, // the split grammar every format resolves with
	"store":             1, // what every format shares: the stack, the disk cache, indexes, stats

	"format":     2, // the registry and the capabilities
	"format/...": 2, // the formats, and format/formats that registers them

	"config":     3,
	"keyed":      3,
	"plan":       3,
	"frames":     3,
	"frames/...": 3,
	"sample":     3, // the seam of the kinds of sample: Kind, the frame stage
	"augment":    3, // augmentation parameters: drawn here, applied by frames
	"pairs":      3,
	"steps":      3, // step samples: pairs' sibling
	"episodes":   3,
	"norm":       3,
	"check":      3, // oxefs check: defects of loaded episodes

	"batch":    4,
	"assemble": 4, // the batches of a view: plan, fetch, assemble, substitute

	"fs":    5,
	"bench": 5,
	"view":  5, // the web page: a reader of what a mount serves

	"loader": 6,

	"": 7, // package main: the CLI

	"internal/layers":      8, // this test
	"e2e":                  8, // tests that exec the built binary
	"internal/testkit":     8, // test helpers, imported by _test files only
	"internal/testkit/...": 8,
	"internal/pythontest":  0,
	"internal/missing":     0, // the wording of a skip for something the machine lacks
	"internal/bytesize":    0, // byte counts as messages and flags write them
	"internal/atomicfile":  0, // whole-file writes by rename
	"internal/npy":         0, // .npy headers: the batch files' one writer
	"scripts/...":          8,
}

// sideways lists the imports allowed within one layer.
var sideways = map[string][]string{
	"storage/...":          {"storage", "internal/bytesize"},
	"episode/splitspec":    {"episode"},
	"format/...":           {"format/...", "format"},
	"frames":               {"frames/..."},
	"augment":              {"keyed", "frames"},
	"config":               {"augment"}, // an augment block is an augment.Spec, checked by its Validate
	"plan":                 {"keyed", "config"},
	"sample":               {"config", "frames", "plan"},                               // the frame stage decodes through frames
	"pairs":                {"augment", "config", "frames", "keyed", "plan", "sample"}, // pairs builds the samples the plan names, recording their augmentation
	"steps":                {"augment", "config", "frames", "keyed", "plan", "sample"}, // steps builds step samples, recording their augmentation
	"norm":                 {"config"},                                                 // the offset range the statistics cover
	"internal/pythontest":  {"internal/missing"},                                       // a Python module missing is skipped as missing
	"scripts/...":          {"internal/testkit/fakehub", "internal/missing"},           // scripts/fakehub serves the tests' fake Hub; testsummary counts missing skips
	"internal/testkit/...": {"internal/testkit", "internal/testkit/..."},               // flipsource puts testkit's proxies before the backends
}

// pure lists packages that must not depend, even indirectly, on storage or
// on a format: the plan is a function of dataset shapes, the config rules,
// the assembler, the batch builder and the frame decoders work on any
// format's data, and the scheduler knows nothing of datasets.
var pure = []string{"plan", "config", "keyed", "frames", "augment", "episode", "episode/splitspec", "episodes", "sample", "pairs", "steps", "norm", "batch", "assemble"}

var forbiddenBelowPure = []string{"storage", "format"}

// match reports whether pattern (a table key) covers the package rel.
func match(pattern, rel string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return strings.HasPrefix(rel, base+"/")
	}
	return pattern == rel
}

// place returns the table key that covers rel, the most specific one.
func place(rel string) (string, bool) {
	best, found := "", false
	for p := range layer {
		if match(p, rel) && (!found || len(p) > len(best)) {
			best, found = p, true
		}
	}
	return best, found
}

// imports parses the non-test Go files of the module and returns, for each
// package (relative path, "" for the root), the module packages it imports.
// Test files may import what their package may not (a test of the plan
// opens a dataset), so the layering is of the code that ships.
func imports(t *testing.T, root string) map[string][]string {
	t.Helper()
	return parseImports(t, root, false)
}

// testImports parses the module's _test.go files and returns, for each
// (its path from the root, "loader/open_test.go"), the module packages it
// imports.
func testImports(t *testing.T, root string) map[string][]string {
	t.Helper()
	return parseImports(t, root, true)
}

// walkGoFiles calls fn with each Go file under dir of the module at root
// (the path to open, and the path relative to root with slashes),
// leaving out hidden, testdata and vendor directories; tests: the
// _test.go files, else the others.
func walkGoFiles(root, dir string, tests bool, fn func(p, rel string) error) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != dir && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") != tests {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		return fn(p, filepath.ToSlash(rel))
	})
}

func parseImports(t *testing.T, root string, tests bool) map[string][]string {
	t.Helper()
	graph := make(map[string]map[string]bool)
	fset := token.NewFileSet()
	err := walkGoFiles(root, root, tests, func(p, _ string) error {
		name := filepath.Base(p)
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel(root, filepath.Dir(p))
		rel := filepath.ToSlash(dir)
		if rel == "." {
			rel = ""
		}
		if tests {
			rel = path.Join(rel, name)
		}
		if graph[rel] == nil {
			graph[rel] = make(map[string]bool)
		}
		for _, imp := range f.Imports {
			ip := strings.Trim(imp.Path.Value, `"`)
			if ip == module {
				graph[rel][""] = true
			} else if r, ok := strings.CutPrefix(ip, module+"/"); ok {
				graph[rel][r] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string][]string, len(graph))
	for pkg, deps := range graph {
		out[pkg] = []string{}
		for d := range deps {
			out[pkg] = append(out[pkg], d)
		}
		sort.Strings(out[pkg])
	}
	return out
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test's directory")
		}
		dir = parent
	}
}

func name(rel string) string {
	if rel == "" {
		return "the root package (main)"
	}
	return rel
}

// registration is the one package outside a format's own directory that
// imports the formats' packages: it registers them with package format.
const registration = "format/formats"

// formatStudies are packages that read one format's bytes on purpose,
// outside the daemon: measurement scripts.
var formatStudies = []string{"scripts/..."}

// neutral lists the packages under format/ that are not formats: the
// registration point, and the synthetic content every format's synth
// writer draws from.
var neutral = []string{registration, "format/synthetic"}

// concreteFormat reports whether rel is a format's package or one below
// it (format/rlds, format/rlds/tfrecord). The registry (format) and the
// neutral packages are not formats.
func concreteFormat(rel string) bool {
	rest, ok := strings.CutPrefix(rel, "format/")
	if !ok {
		return false
	}
	name, _, _ := strings.Cut(rest, "/")
	return !slices.Contains(neutral, "format/"+name)
}

// diskcache is the disk cache's package. Formats read through package
// store (store.Source and its ranged reads), never the cache itself, so
// the cache's policy stays behind one call.
const diskcache = "storage/diskcache"

// checkDiskcache returns every import of the disk cache by a package of
// format/.
func checkDiskcache(graph map[string][]string) []string {
	var out []string
	pkgs := slices.Sorted(maps.Keys(graph))
	for _, pkg := range pkgs {
		if pkg != "format" && !strings.HasPrefix(pkg, "format/") {
			continue
		}
		for _, dep := range graph[pkg] {
			if dep == diskcache || strings.HasPrefix(dep, diskcache+"/") {
				out = append(out, fmt.Sprintf("%s imports %s: formats read through package store, not the disk cache", pkg, dep))
			}
		}
	}
	return out
}

// TestFormatsBehindStore: no package of format/ imports the disk cache.
func TestFormatsBehindStore(t *testing.T) {
	for _, v := range checkDiskcache(imports(t, moduleRoot(t))) {
		t.Error(v)
	}
}

// TestCheckDiskcacheCatchesImports proves the store rule can fail: on a
// graph with a format, a format's subpackage and the registry importing
// the disk cache it reports each, and it lets the store and the loader be.
func TestCheckDiskcacheCatchesImports(t *testing.T) {
	graph := map[string][]string{
		"format":             {"store", "storage/diskcache"},
		"format/rlds":        {"format", "store"},
		"format/lerobot/mp4": {"storage/diskcache"},
		"format/formats":     {"format/rlds", "storage/diskcache"},
		"store":              {"storage/diskcache"},
		"loader":             {"storage/diskcache", "store"},
		"storage/diskcache":  {"storage"},
		"format/synthetic":   {},
	}
	got := checkDiskcache(graph)
	want := []string{
		"format imports storage/diskcache",
		"format/formats imports storage/diskcache",
		"format/lerobot/mp4 imports storage/diskcache",
	}
	wantViolations(t, got, want)
}

// byteStudies are the test files (and test helper packages) outside
// format/ that may import a format's package, each because it works on
// that format's bytes or its concrete records, which no capability of
// package format exposes; every other test reaches formats through the
// registry, as the code does.
var byteStudies = map[string]string{
	"internal/testkit":              "damages LeRobot fixtures: drops a sample from an MP4 track (mp4.Parse, mp4.Writer)",
	"e2e/mount_data_faults_test.go": "plants a bad record in a TFRecord shard (tfrecord.Index)",
	"e2e/mount_lerobot_test.go":     "compares served batches with LeRobot episodes by LeRobot episode index and task",
	"frames/video_window_test.go":   "cuts windows of real MP4 tracks to feed the video decoder",
	"pairs/baddata_test.go":         "rewrites TFRecord shards' tf.Examples to plant bad data",
	"pairs/bomb_test.go":            "rewrites a tf.Example to plant a decompression bomb",
}

// packageOf returns the package of a graph node: the node itself, or the
// directory of a file node ("loader/open_test.go").
func packageOf(node string) string {
	if !strings.HasSuffix(node, ".go") {
		return node
	}
	if dir := path.Dir(node); dir != "." {
		return dir
	}
	return ""
}

// checkFormats returns every import of a format's package from outside
// format/ other than the registration point's: the rest of oxefs reaches
// formats through package format's registry and capabilities only. The
// graph's nodes are packages or, for test files, files.
func checkFormats(graph map[string][]string) []string {
	var out []string
	pkgs := slices.Sorted(maps.Keys(graph))
	for _, node := range pkgs {
		pkg := packageOf(node)
		if pkg == "format" || strings.HasPrefix(pkg, "format/") || covered(formatStudies, pkg) || byteStudies[node] != "" {
			continue
		}
		for _, dep := range graph[node] {
			if !concreteFormat(dep) {
				continue
			}
			out = append(out, fmt.Sprintf("%s imports %s: outside format/, only %s imports a format's package; go through package format (Open and its capability interfaces)",
				name(node), dep, registration))
		}
	}
	return out
}

func covered(patterns []string, rel string) bool {
	for _, p := range patterns {
		if match(p, rel) {
			return true
		}
	}
	return false
}

// TestFormatsBehindRegistry: no package outside format/ but the
// registration point imports a format's package, and no test file either
// but the byte studies.
func TestFormatsBehindRegistry(t *testing.T) {
	root := moduleRoot(t)
	graph := imports(t, root)
	if _, ok := graph[registration]; !ok {
		t.Fatalf("the registration point %s does not exist", registration)
	}
	for _, v := range checkFormats(graph) {
		t.Error(v)
	}
	tests := testImports(t, root)
	for _, v := range checkFormats(tests) {
		t.Error(v)
	}
	for file := range byteStudies {
		if !slices.ContainsFunc(tests[file], concreteFormat) && !slices.ContainsFunc(graph[file], concreteFormat) {
			t.Errorf("%s is exempt as a byte study but imports no format's package: drop it from byteStudies", file)
		}
	}
}

// TestCheckFormatsCatchesConcreteImports proves the format check can fail:
// on a graph with the loader and the command importing formats' packages
// it reports each (a format's synth writer too: `oxefs synth` goes through
// format.Synth), and it lets the registration point, the scripts and the
// formats themselves be.
func TestCheckFormatsCatchesConcreteImports(t *testing.T) {
	graph := map[string][]string{
		"loader":               {"format", "format/rlds"},
		"":                     {"format/lerobot/mp4", "format/rlds/synth", "format"},
		"bench":                {"format/formats", "format/synthetic"},
		"format/formats":       {"format", "format/rlds", "format/lerobot"},
		"format/lerobot":       {"format/lerobot/mp4"},
		"scripts/episodebytes": {"format/rlds/tfrecord"},
	}
	got := checkFormats(graph)
	want := []string{
		"the root package (main) imports format/lerobot/mp4",
		"the root package (main) imports format/rlds/synth",
		"loader imports format/rlds",
	}
	wantViolations(t, got, want)
}

// TestCheckDiskcacheOnFiles plants a format file that imports the disk
// cache in a module tree, beside the store that may, and checks that the
// whole check, from parsing on, reports the format and only it.
func TestCheckDiskcacheOnFiles(t *testing.T) {
	root := t.TempDir()
	for rel, src := range map[string]string{
		"go.mod":                     "module " + module + "\n",
		"storage/diskcache/cache.go": "package diskcache\n",
		"store/store.go":             "package store\n\nimport _ \"" + module + "/storage/diskcache\"\n",
		"format/rlds/ok.go":          "package rlds\n\nimport _ \"" + module + "/store\"\n",
		"format/rlds/bad.go":         "package rlds\n\nimport _ \"" + module + "/storage/diskcache\"\n",
	} {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := checkDiskcache(imports(t, root))
	if len(got) != 1 || !strings.HasPrefix(got[0], "format/rlds imports storage/diskcache") {
		t.Fatalf("check reported %q, want one violation: format/rlds imports storage/diskcache", got)
	}
}

// TestCheckFormatsOnFiles plants files that import a format's package in
// a package of a module tree (code, a test, a byte study, a format's own
// test) and checks that the whole check, from parsing on, reports the code
// and the test, and only them.
func TestCheckFormatsOnFiles(t *testing.T) {
	root := t.TempDir()
	write := planter(t, root)
	write("go.mod", "module "+module+"\n")
	write("format/rlds/rlds.go", "package rlds\n")
	write("format/formats/formats.go", "package formats\n\nimport _ \""+module+"/format/rlds\"\n")
	write("loader/ok.go", "package loader\n\nimport _ \""+module+"/format/formats\"\n")
	write("loader/bad.go", "package loader\n\nimport \""+module+"/format/rlds\"\n\nvar _ rlds.Dataset\n")
	write("loader/bad_test.go", "package loader\n\nimport _ \""+module+"/format/rlds\"\n")
	write("loader/ok_test.go", "package loader\n\nimport _ \""+module+"/format/formats\"\n")
	write("pairs/baddata_test.go", "package pairs\n\nimport _ \""+module+"/format/rlds/tfrecord\"\n")
	write("format/rlds/rlds_test.go", "package rlds\n\nimport _ \""+module+"/format/rlds/tfrecord\"\n")
	got := checkFormats(imports(t, root))
	if len(got) != 1 || !strings.HasPrefix(got[0], "loader imports format/rlds") {
		t.Fatalf("check reported %q, want one violation: loader imports format/rlds", got)
	}
	// The test files: the planted one, not the byte study nor a format's
	// own test.
	got = checkFormats(testImports(t, root))
	if len(got) != 1 || !strings.HasPrefix(got[0], "loader/bad_test.go imports format/rlds") {
		t.Fatalf("check of the test files reported %q, want one violation: loader/bad_test.go imports format/rlds", got)
	}
}

func TestImportDirection(t *testing.T) {
	graph := imports(t, moduleRoot(t))
	if len(graph) < 10 {
		t.Fatalf("found only %d packages; is the test running inside the module?", len(graph))
	}
	for _, v := range check(graph) {
		t.Error(v)
	}
}

// check returns every violation of the layering in graph.
func check(graph map[string][]string) []string {
	var out []string
	pkgs := slices.Sorted(maps.Keys(graph))
	for _, pkg := range pkgs {
		from, ok := place(pkg)
		if !ok {
			out = append(out, fmt.Sprintf("package %s is not placed in a layer: add it to the table in internal/layers/layers_test.go", name(pkg)))
			continue
		}
		for _, dep := range graph[pkg] {
			to, ok := place(dep)
			if !ok {
				continue // reported as a package of its own
			}
			switch {
			case layer[to] < layer[from]:
			case layer[to] == layer[from] && (from == to || allowedSideways(from, dep)):
			default:
				out = append(out, fmt.Sprintf("%s (layer %d) imports %s (layer %d): imports must point down the layers (see internal/layers)",
					name(pkg), layer[from], name(dep), layer[to]))
			}
		}
	}
	for _, p := range pure {
		if _, ok := graph[p]; !ok {
			out = append(out, fmt.Sprintf("package %s listed as pure does not exist", p))
			continue
		}
		deps := reach(graph, p)
		names := make([]string, 0, len(deps))
		for d := range deps {
			names = append(names, d)
		}
		sort.Strings(names)
		for _, dep := range names {
			for _, bad := range forbiddenBelowPure {
				if dep == bad || strings.HasPrefix(dep, bad+"/") {
					out = append(out, fmt.Sprintf("%s depends on %s (via %s): it must not depend on storage or a format", p, dep, deps[dep]))
				}
			}
		}
	}
	return out
}

// TestCheckCatchesBadImports proves the check can fail: on a graph with an
// upward import, a sideways one, an unplaced package and a plan that
// reaches a format through a helper, it reports each.
func TestCheckCatchesBadImports(t *testing.T) {
	graph := map[string][]string{
		"storage/gcs": {"batch"},
		"batch":       {},
		"frames":      {"pairs"},
		"pairs":       {},
		"newthing":    {},
		"plan":        {"keyed"},
		"keyed":       {"format/rlds"},
		"format/rlds": {"storage"},
		"storage":     {},
	}
	for _, p := range pure {
		if _, ok := graph[p]; !ok {
			graph[p] = nil
		}
	}
	got := strings.Join(check(graph), "\n")
	for _, want := range []string{
		"storage/gcs (layer 0) imports batch (layer 4)",
		"frames (layer 3) imports pairs (layer 3)",
		"package newthing is not placed",
		"plan depends on format/rlds (via keyed)",
		"plan depends on storage (via format/rlds)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("check missed %q; it reported:\n%s", want, got)
		}
	}
	// keyed importing format/rlds points down the layers: only the purity
	// rule above may object to it, not the direction rule.
	if strings.Contains(got, "keyed (layer 3) imports format/rlds") {
		t.Errorf("a downward import was reported:\n%s", got)
	}
}

func allowedSideways(from, dep string) bool {
	for _, p := range sideways[from] {
		if match(p, dep) {
			return true
		}
	}
	return false
}

// reach returns every package reachable from p, each with the package that
// first led to it.
func reach(graph map[string][]string, p string) map[string]string {
	seen := map[string]string{}
	queue := []string{p}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, d := range graph[cur] {
			if _, ok := seen[d]; !ok && d != p {
				seen[d] = cur
				queue = append(queue, d)
			}
		}
	}
	return seen
}

// wantViolations fails t unless got holds one violation per want, in
// order, each starting with it.
func wantViolations(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("check reported %d violations, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("violation %d: got %q, want it to start with %q", i, got[i], w)
		}
	}
}

// planter returns a function that writes a file of a planted module tree
// under root, making its directories.
func planter(t *testing.T, root string) func(rel, src string) {
	return func(rel, src string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
