// Package zzglob stands in for drjosh.dev/zzglob when the launcher builds buildkite-agent.
//
// Every buildkite-agent release imports drjosh.dev/zzglob, and the Go module proxy refuses to serve it (403), so a
// plain `go install` of the agent fails. The agent's source stays unmodified: our build module replaces that one
// package with this adapter, which offers exactly the API the agent calls (Parse with ExpandTilde, Pattern.Match,
// Pattern.Glob with WalkIntermediateDirs and TraverseSymlinks, MultiGlob) on top of github.com/bmatcuk/doublestar/v4,
// a dependency the agent already has.
//
// Semantics follow zzglob's: `*` and `?` stay inside one path segment, `**` spans any number of segments (zero
// included, so `dist/**/*` matches `dist/a`), `{a,b}` alternates, `[...]` is a character class, `\` escapes, and a
// leading `~` is the user's home directory unless ExpandTilde(false). Glob walks from the pattern's literal root
// and calls back with that root joined to each match ("dist/a.txt" for "dist/**/*", "a.txt" for "*.txt"), for
// files and for directories that match; a pattern without any meta character is one stat of that path, whose
// error, if any, is passed to the callback.
package zzglob

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// Pattern is a parsed glob pattern.
type Pattern struct {
	// pattern is the whole pattern with `/` separators and `~` expanded: what Match compares against.
	pattern string
	// root is the part before the first meta character, up to the last `/` there ("." when there is none).
	root string
	// rest is what remains after root, relative to it; empty when the pattern has no meta character.
	rest string
}

type parseConfig struct {
	expandTilde bool
}

// ParseOption changes how a pattern is parsed.
type ParseOption = func(*parseConfig)

// ExpandTilde turns the expansion of a leading `~` into the user's home directory on or off (on by default).
func ExpandTilde(enable bool) ParseOption {
	return func(c *parseConfig) { c.expandTilde = enable }
}

type globConfig struct {
	traverseSymlinks     bool
	walkIntermediateDirs bool
}

// GlobOption changes how Glob and MultiGlob walk.
type GlobOption = func(*globConfig)

// TraverseSymlinks turns following symlinked directories on or off (on by default).
func TraverseSymlinks(traverse bool) GlobOption {
	return func(c *globConfig) { c.traverseSymlinks = traverse }
}

// WalkIntermediateDirs, when on, also calls back with the pattern's root directory before its matches, so that an
// unreadable root is reported (zzglob also reports deeper partial matches; no caller here needs them).
func WalkIntermediateDirs(enable bool) GlobOption {
	return func(c *globConfig) { c.walkIntermediateDirs = enable }
}

// Parse parses a glob pattern.
func Parse(pattern string, opts ...ParseOption) (*Pattern, error) {
	cfg := parseConfig{expandTilde: true}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	p := filepath.ToSlash(pattern)
	if cfg.expandTilde && (p == "~" || strings.HasPrefix(p, "~/")) {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, fmt.Errorf("expanding ~ in %q: %w", pattern, err)
		}
		p = filepath.ToSlash(home) + p[1:]
	}
	if !doublestar.ValidatePattern(p) {
		return nil, fmt.Errorf("invalid glob pattern %q: %w", pattern, doublestar.ErrBadPattern)
	}
	if !hasMeta(p) {
		return &Pattern{pattern: p, root: unescape(p)}, nil
	}
	root, rest := doublestar.SplitPattern(p)
	return &Pattern{pattern: p, root: unescape(root), rest: rest}, nil
}

// String returns the pattern as parsed (after `~` expansion).
func (p *Pattern) String() string { return p.pattern }

// Match reports whether a path (with either separator) matches the whole pattern.
func (p *Pattern) Match(name string) bool {
	ok, err := doublestar.Match(p.pattern, filepath.ToSlash(name))
	return err == nil && ok
}

// Glob calls f for every path under the pattern's root that matches it. An error f returns ends the walk and is
// returned (fs.SkipDir and fs.SkipAll end it quietly).
func (p *Pattern) Glob(f fs.WalkDirFunc, opts ...GlobOption) error {
	if f == nil {
		return errors.New("nil WalkDirFunc in arg to Glob")
	}
	return quiet(p.glob(context.Background(), f, newGlobConfig(opts)))
}

// MultiGlob is Glob for several patterns. f is called from one goroutine at a time; the walk stops early when ctx
// is done.
func MultiGlob(ctx context.Context, patterns []*Pattern, f fs.WalkDirFunc, opts ...GlobOption) error {
	if f == nil {
		return errors.New("nil WalkDirFunc in arg to MultiGlob")
	}
	cfg := newGlobConfig(opts)
	for _, p := range patterns {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := quiet(p.glob(ctx, f, cfg)); err != nil {
			return err
		}
	}
	return nil
}

func newGlobConfig(opts []GlobOption) globConfig {
	cfg := globConfig{traverseSymlinks: true}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	return cfg
}

func (p *Pattern) glob(ctx context.Context, f fs.WalkDirFunc, cfg globConfig) error {
	osRoot := filepath.FromSlash(path.Clean(p.root))
	if p.rest == "" {
		// A literal path: one stat, as zzglob does, reporting a missing file to the callback.
		info, err := os.Stat(osRoot)
		var entry fs.DirEntry
		if info != nil {
			entry = fs.FileInfoToDirEntry(info)
		}
		return f(osRoot, entry, err)
	}
	if cfg.walkIntermediateDirs {
		info, statErr := os.Stat(osRoot)
		var entry fs.DirEntry
		if info != nil {
			entry = fs.FileInfoToDirEntry(info)
		}
		if err := f(osRoot, entry, statErr); err != nil || statErr != nil {
			return err
		}
	}
	var walkOpts []doublestar.GlobOption
	if !cfg.traverseSymlinks {
		walkOpts = append(walkOpts, doublestar.WithNoFollow())
	}
	return doublestar.GlobWalk(os.DirFS(osRoot), p.rest, func(match string, d fs.DirEntry) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		return f(filepath.FromSlash(path.Join(path.Clean(p.root), match)), d, nil)
	}, walkOpts...)
}

// quiet turns the callback's "stop here" answers into a plain end of the walk, as fs.WalkDir does at the top.
func quiet(err error) error {
	if errors.Is(err, fs.SkipDir) || errors.Is(err, fs.SkipAll) {
		return nil
	}
	return err
}

// hasMeta reports whether a pattern has an unescaped meta character.
func hasMeta(p string) bool {
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '*', '?', '[', '{':
			return true
		}
	}
	return false
}

// unescape removes the escaping backslashes of a literal part of a pattern.
func unescape(p string) string {
	if !strings.Contains(p, `\`) {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '\\' && i+1 < len(p) {
			i++
		}
		b.WriteByte(p[i])
	}
	return b.String()
}
