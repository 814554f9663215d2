package cache

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"path/filepath"
	"slices"
	"strings"

	"google.golang.org/api/googleapi"
)

// anonymousHint is the remedy for a public bucket read with credentials
// that are missing or refused.
const anonymousHint = "if the bucket is public, read it without credentials: " +
	"`anonymous: true` on the dataset in the mix config, or --anonymous for inspect"

// withSourceHint adds a remedy to err, the failure to read src's
// dataset_info.json, where the cause is a common mistake:
//   - a local directory above the dataset (.../bridge instead of
//     .../bridge/0.1.0, or the directory of all datasets): the datasets
//     found below it are listed;
//   - a GCS source whose credentials are refused (HTTP 401 or 403): for a
//     public bucket, anonymous access is suggested.
//
// Other errors come back as they are. The result wraps err.
func withSourceHint(src Source, err error) error {
	switch s := src.(type) {
	case Local:
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		found := datasetsBelow(s.Dir, 3, 10000)
		if len(found) == 0 {
			return err
		}
		list := found
		if len(list) > 10 {
			list = append(list[:10:10], fmt.Sprintf("and %d more", len(found)-10))
		}
		return fmt.Errorf("%w; no dataset_info.json in %s, but datasets below it: %s (give one of them as the source, e.g. %s)",
			err, s.Dir, strings.Join(list, ", "), filepath.Join(s.Dir, found[0]))
	case *GCS:
		if ae, ok := errors.AsType[*googleapi.Error](err); ok && !s.anonymous &&
			(ae.Code == http.StatusUnauthorized || ae.Code == http.StatusForbidden) {
			return fmt.Errorf("%w; %s", err, anonymousHint)
		}
	}
	return err
}

// withCredentialsHint adds the anonymous remedy to a GCS client that could
// not be made for lack of credentials.
func withCredentialsHint(err error) error {
	return fmt.Errorf("%w; %s", err, anonymousHint)
}

// datasetsBelow lists, relative to dir and sorted, the directories at most
// depth levels below it that hold a dataset_info.json, looking at no more
// than limit entries.
func datasetsBelow(dir string, depth, limit int) []string {
	var found []string
	seen := 0
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: skip it, keep looking
		}
		if seen++; seen > limit {
			return filepath.SkipAll
		}
		rel, rerr := filepath.Rel(dir, p)
		if rerr != nil {
			return nil
		}
		level := 0
		if rel != "." {
			level = strings.Count(rel, string(filepath.Separator)) + 1
		}
		switch {
		case d.IsDir() && level >= depth+1:
			return filepath.SkipDir
		case !d.IsDir() && d.Name() == "dataset_info.json" && level >= 2:
			found = append(found, filepath.ToSlash(filepath.Dir(rel)))
		}
		return nil
	})
	slices.Sort(found)
	return found
}
