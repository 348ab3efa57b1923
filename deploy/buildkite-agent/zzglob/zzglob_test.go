package zzglob

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

// tree makes files (and, for names ending in "/", directories) under a fresh directory and changes into it.
func tree(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range names {
		full := filepath.Join(dir, filepath.FromSlash(name))
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	return dir
}

// glob returns what Glob calls back with (files and directories), sorted, with `/` separators.
func glob(t *testing.T, pattern string, opts ...GlobOption) []string {
	t.Helper()
	p, err := Parse(pattern)
	if err != nil {
		t.Fatalf("Parse(%q): %v", pattern, err)
	}
	var got []string
	err = p.Glob(func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		got = append(got, filepath.ToSlash(path))
		return nil
	}, opts...)
	if err != nil {
		t.Fatalf("Glob(%q): %v", pattern, err)
	}
	sort.Strings(got)
	return got
}

func expect(t *testing.T, pattern string, got, want []string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if got == nil {
		got = []string{}
	}
	if !slices.Equal(got, want) {
		t.Errorf("%q matched %q, want %q", pattern, got, want)
	}
}

func TestDoubleStarMatchesAnyDepthIncludingNone(t *testing.T) {
	tree(t, "dist/a.txt", "dist/sub/b.txt", "dist/sub/deeper/c.bin", "other/d.txt", "top.txt")
	expect(t, "dist/**/*", glob(t, "dist/**/*"),
		[]string{"dist/a.txt", "dist/sub", "dist/sub/b.txt", "dist/sub/deeper", "dist/sub/deeper/c.bin"})
	expect(t, "dist/**/*.txt", glob(t, "dist/**/*.txt"), []string{"dist/a.txt", "dist/sub/b.txt"})
	expect(t, "**/*.txt", glob(t, "**/*.txt"), []string{"dist/a.txt", "dist/sub/b.txt", "other/d.txt", "top.txt"})
}

func TestStarAndQuestionStayInOneSegment(t *testing.T) {
	tree(t, "a1.txt", "a22.txt", "dir/a3.txt")
	expect(t, "*.txt", glob(t, "*.txt"), []string{"a1.txt", "a22.txt"})
	expect(t, "a?.txt", glob(t, "a?.txt"), []string{"a1.txt"})
	expect(t, "*/a?.txt", glob(t, "*/a?.txt"), []string{"dir/a3.txt"})
}

func TestAlternationAndCharacterClasses(t *testing.T) {
	tree(t, "build/app.js", "build/app.css", "build/app.map", "log1", "log2", "logx")
	expect(t, "build/*.{js,css}", glob(t, "build/*.{js,css}"), []string{"build/app.css", "build/app.js"})
	expect(t, "log[0-9]", glob(t, "log[0-9]"), []string{"log1", "log2"})
	expect(t, "log[!0-9]", glob(t, "log[!0-9]"), []string{"logx"})
	expect(t, "log[^12]", glob(t, "log[^12]"), []string{"logx"})
}

func TestDotFilesAndUnicodeNames(t *testing.T) {
	tree(t, "out/.hidden", "out/résumé ✓.txt", "out/日本語/ファイル.txt")
	expect(t, "out/**/*", glob(t, "out/**/*"),
		[]string{"out/.hidden", "out/résumé ✓.txt", "out/日本語", "out/日本語/ファイル.txt"})
}

func TestLiteralPathIsOneStatAndReportsMissingFiles(t *testing.T) {
	tree(t, "dist/a.txt")
	expect(t, "dist/a.txt", glob(t, "dist/a.txt"), []string{"dist/a.txt"})
	p, err := Parse("dist/missing.txt")
	if err != nil {
		t.Fatal(err)
	}
	var seen error
	if err := p.Glob(func(_ string, _ fs.DirEntry, err error) error {
		seen = err
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(seen, fs.ErrNotExist) {
		t.Errorf("a missing literal path reported %v, want fs.ErrNotExist", seen)
	}
}

func TestMissingRootMatchesNothing(t *testing.T) {
	tree(t, "a.txt")
	expect(t, "nowhere/**/*", glob(t, "nowhere/**/*"), nil)
}

func TestEscapedMetaCharactersAreLiteral(t *testing.T) {
	tree(t, "weird/a*b.txt", "weird/axb.txt")
	expect(t, `weird/a\*b.txt`, glob(t, `weird/a\*b.txt`), []string{"weird/a*b.txt"})
}

func TestAbsolutePatternsGiveAbsolutePaths(t *testing.T) {
	dir := tree(t, "abs/x.log", "abs/y.txt")
	pattern := filepath.ToSlash(dir) + "/abs/*.log"
	expect(t, pattern, glob(t, pattern), []string{filepath.ToSlash(dir) + "/abs/x.log"})
}

func TestSymlinkedDirectoriesFollowedUnlessTurnedOff(t *testing.T) {
	dir := tree(t, "real/inner.txt", "art/")
	if err := os.Symlink(filepath.Join(dir, "real"), filepath.Join(dir, "art", "link")); err != nil {
		t.Fatal(err)
	}
	expect(t, "art/**/*.txt (following)", glob(t, "art/**/*.txt"), []string{"art/link/inner.txt"})
	expect(t, "art/**/*.txt (not following)", glob(t, "art/**/*.txt", TraverseSymlinks(false)), nil)
	// The symlink itself still matches a pattern that names it.
	expect(t, "art/*", glob(t, "art/*", TraverseSymlinks(false)), []string{"art/link"})
}

func TestTildeExpansion(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	if err := os.WriteFile(filepath.Join(home, "h.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	expect(t, "~/*.txt", glob(t, "~/*.txt"), []string{filepath.ToSlash(home) + "/h.txt"})
	tree(t, "~/lit.txt")
	p, err := Parse("~/*.txt", ExpandTilde(false))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := p.Glob(func(path string, _ fs.DirEntry, err error) error {
		got = append(got, filepath.ToSlash(path))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	expect(t, "~/*.txt without expansion", got, []string{"~/lit.txt"})
}

func TestMatch(t *testing.T) {
	cases := []struct {
		pattern, path string
		want          bool
	}{
		{"src/**/*.go", "src/a/b/c.go", true},
		{"src/**/*.go", "src/c.go", true},
		{"src/*.go", "src/a/c.go", false},
		{"*.{md,txt}", "README.md", true},
		{"*.{md,txt}", "README.rst", false},
		{"docs/[a-c]*", "docs/beta", true},
		{"docs/[a-c]*", "docs/delta", false},
		{"**", "anything/at/all", true},
	}
	for _, c := range cases {
		p, err := Parse(c.pattern)
		if err != nil {
			t.Fatalf("Parse(%q): %v", c.pattern, err)
		}
		if got := p.Match(c.path); got != c.want {
			t.Errorf("%q.Match(%q) = %v, want %v", c.pattern, c.path, got, c.want)
		}
	}
}

func TestBadPatternsAreErrors(t *testing.T) {
	for _, pattern := range []string{"a[", "{a,b", "dist/[z-a"} {
		if _, err := Parse(pattern); err == nil {
			t.Errorf("Parse(%q) succeeded, want an error", pattern)
		}
	}
}

func TestWalkIntermediateDirsReportsTheRoot(t *testing.T) {
	tree(t, "cache/k1", "cache/k2")
	p, err := Parse("cache/*")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := p.Glob(func(path string, _ fs.DirEntry, err error) error {
		got = append(got, filepath.ToSlash(path))
		return err
	}, WalkIntermediateDirs(true)); err != nil {
		t.Fatal(err)
	}
	expect(t, "cache/* with intermediate dirs", got, []string{"cache", "cache/k1", "cache/k2"})

	missing, err := Parse("gone/*")
	if err != nil {
		t.Fatal(err)
	}
	var rootErr error
	if err := missing.Glob(func(_ string, _ fs.DirEntry, err error) error {
		rootErr = err
		return nil
	}, WalkIntermediateDirs(true)); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(rootErr, fs.ErrNotExist) {
		t.Errorf("a missing root reported %v, want fs.ErrNotExist", rootErr)
	}
}

func TestCallbackErrorsStopTheWalk(t *testing.T) {
	tree(t, "s/a", "s/b", "s/c")
	p, err := Parse("s/*")
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	calls := 0
	err = p.Glob(func(string, fs.DirEntry, error) error {
		calls++
		return boom
	})
	if !errors.Is(err, boom) || calls != 1 {
		t.Errorf("Glob returned %v after %d calls, want boom after 1", err, calls)
	}
	calls = 0
	if err := p.Glob(func(string, fs.DirEntry, error) error {
		calls++
		return fs.SkipAll
	}); err != nil || calls != 1 {
		t.Errorf("SkipAll: Glob returned %v after %d calls, want nil after 1", err, calls)
	}
}

func TestMultiGlobCoversEveryPatternAndHonoursCancel(t *testing.T) {
	tree(t, "a/1.txt", "b/2.log", "c/3.bin")
	var patterns []*Pattern
	for _, s := range []string{"a/*.txt", "b/*.log", "missing/**/*"} {
		p, err := Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		patterns = append(patterns, p)
	}
	var mu sync.Mutex
	var got []string
	err := MultiGlob(context.Background(), patterns, func(path string, _ fs.DirEntry, err error) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, filepath.ToSlash(path))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(got)
	expect(t, "MultiGlob", got, []string{"a/1.txt", "b/2.log"})

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := MultiGlob(ctx, patterns, func(string, fs.DirEntry, error) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("MultiGlob with a canceled context returned %v, want context.Canceled", err)
	}
}
