package memory

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeFile creates path (and its parents) with content.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

// loadUnder runs Load and keeps the files and warnings inside root, so files
// that happen to sit in the temp dir's ancestors (outside the test's control)
// are ignored.
func loadUnder(root string, o Options) ([]File, []string) {
	files, warnings := Load(o)
	var fs []File
	for _, f := range files {
		if strings.HasPrefix(f.Path, root+string(filepath.Separator)) {
			fs = append(fs, f)
		}
	}
	var ws []string
	for _, w := range warnings {
		if strings.Contains(w, root) {
			ws = append(ws, w)
		}
	}
	return fs, ws
}

func paths(files []File) []string {
	var ps []string
	for _, f := range files {
		ps = append(ps, f.Path)
	}
	return ps
}

func TestLoadOrderUserFirstThenRootToCwd(t *testing.T) {
	root := t.TempDir()
	cfg := filepath.Join(root, "cfg", "decode")
	cwd := filepath.Join(root, "a", "b")
	for _, p := range []string{
		filepath.Join(cfg, "AGENTS.md"),
		filepath.Join(root, "AGENTS.md"),
		filepath.Join(root, "a", "MEMORY.md"),
		filepath.Join(cwd, "MEMORY.md"),
		filepath.Join(cwd, "AGENTS.md"),
		filepath.Join(cwd, "c", "AGENTS.md"),  // below cwd: not read
		filepath.Join(root, "x", "AGENTS.md"), // a sibling: not read
		filepath.Join(root, "a", "README.md"), // not a memory file
	} {
		writeFile(t, p, "from "+p+"\n")
	}

	files, warnings := loadUnder(root, Options{Cwd: cwd, UserConfigDir: cfg})

	assert.Empty(t, warnings)
	assert.Equal(t, []string{
		filepath.Join(cfg, "AGENTS.md"),
		filepath.Join(root, "AGENTS.md"),
		filepath.Join(root, "a", "MEMORY.md"),
		filepath.Join(cwd, "AGENTS.md"),
		filepath.Join(cwd, "MEMORY.md"),
	}, paths(files), "user file first, then root to cwd with AGENTS.md before MEMORY.md")
	for _, f := range files {
		assert.Equal(t, "from "+f.Path+"\n", f.Content, "content of %s", f.Path)
		assert.Equal(t, 1, f.Lines)
		assert.Equal(t, len(f.Content), f.Size)
		assert.Empty(t, f.Cut)
	}
}

func TestLoadUserFileFromHomeWhenNoConfigDir(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	cwd := filepath.Join(root, "work")
	writeFile(t, filepath.Join(home, ".config", "decode", "AGENTS.md"), "user\n")
	writeFile(t, filepath.Join(cwd, "AGENTS.md"), "project\n")

	files, _ := loadUnder(root, Options{Cwd: cwd, Home: home})

	assert.Equal(t, []string{
		filepath.Join(home, ".config", "decode", "AGENTS.md"),
		filepath.Join(cwd, "AGENTS.md"),
	}, paths(files))
}

func TestLoadReadsEachFileOnce(t *testing.T) {
	root := t.TempDir()
	cwd := filepath.Join(root, "a")
	writeFile(t, filepath.Join(root, "AGENTS.md"), "top\n")
	require.NoError(t, os.MkdirAll(cwd, 0o755))
	require.NoError(t, os.Symlink(filepath.Join("..", "AGENTS.md"), filepath.Join(cwd, "AGENTS.md")))

	// The config dir is the root itself, so root/AGENTS.md is reached as
	// the user file, as root's file and through the symlink.
	files, warnings := loadUnder(root, Options{Cwd: cwd, UserConfigDir: root})

	assert.Empty(t, warnings)
	assert.Equal(t, []string{filepath.Join(root, "AGENTS.md")}, paths(files))
}

func TestLoadCapsByLines(t *testing.T) {
	root := t.TempDir()
	var b strings.Builder
	for i := 1; i <= 540; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	writeFile(t, filepath.Join(root, "AGENTS.md"), b.String())

	files, _ := loadUnder(root, Options{Cwd: root, MaxLines: 200, MaxBytes: 1 << 20})

	require.Len(t, files, 1)
	f := files[0]
	assert.Equal(t, 540, f.Lines)
	assert.Equal(t, b.Len(), f.Size)
	assert.Equal(t, "cut at 200 lines of 540", f.Cut)
	lines := strings.Split(strings.TrimSuffix(f.Content, "\n"), "\n")
	require.Len(t, lines, 201, "200 kept lines and the note")
	assert.Equal(t, "line 200", lines[199])
	assert.Equal(t, "[decode: cut at 200 lines of 540; read the file for the rest]", lines[200])
}

func TestLoadDefaultCaps(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "AGENTS.md"), strings.Repeat("x\n", DefaultMaxLines+1))

	files, _ := loadUnder(root, Options{Cwd: root})

	require.Len(t, files, 1)
	assert.Equal(t, fmt.Sprintf("cut at %d lines of %d", DefaultMaxLines, DefaultMaxLines+1), files[0].Cut)
}

func TestLoadCapsByBytesAtLineBoundary(t *testing.T) {
	root := t.TempDir()
	line := strings.Repeat("a", 99) + "\n" // 100 bytes
	writeFile(t, filepath.Join(root, "MEMORY.md"), strings.Repeat(line, 50))

	files, _ := loadUnder(root, Options{Cwd: root, MaxLines: 1000, MaxBytes: 1050})

	require.Len(t, files, 1)
	f := files[0]
	assert.Equal(t, 5000, f.Size)
	assert.Equal(t, 50, f.Lines)
	assert.Equal(t, "cut at 1000 bytes of 5000", f.Cut)
	kept, note, ok := strings.Cut(f.Content, "[decode: ")
	require.True(t, ok, "the note is in the content")
	assert.Equal(t, strings.Repeat(line, 10), kept, "cut after the last whole line within the cap")
	assert.Equal(t, "cut at 1000 bytes of 5000; read the file for the rest]\n", note)
}

func TestLoadBytesCapWinsOverLongLinesWithinLineCap(t *testing.T) {
	root := t.TempDir()
	line := strings.Repeat("b", 99) + "\n"
	writeFile(t, filepath.Join(root, "AGENTS.md"), strings.Repeat(line, 300))

	// 200 lines would be 20,000 bytes, over the byte cap.
	files, _ := loadUnder(root, Options{Cwd: root, MaxLines: 200, MaxBytes: 2000})

	require.Len(t, files, 1)
	assert.Equal(t, "cut at 2000 bytes of 30000", files[0].Cut)
	assert.True(t, strings.HasPrefix(files[0].Content, strings.Repeat(line, 20)+"[decode: "))
}

func TestCapTextNeverSplitsARune(t *testing.T) {
	for _, unit := range []string{"é", "日", "🙂", "a日é🙂"} {
		text := strings.Repeat(unit, 200) // one long line: no line boundary to cut at
		for limit := 1; limit <= 24; limit++ {
			content, cut := capText([]byte(text), len(text), 1, 0, limit)
			require.NotEmpty(t, cut, "%q capped at %d", unit, limit)
			kept, _, _ := strings.Cut(content, "[decode: ")
			kept = strings.TrimSuffix(kept, "\n")
			assert.True(t, utf8.ValidString(kept), "%q capped at %d bytes kept %q", unit, limit, kept)
			assert.LessOrEqual(t, len(kept), limit)
			assert.Greater(t, len(kept), limit-utf8.UTFMax, "cut as late as the rune boundary allows")
			assert.True(t, strings.HasPrefix(text, kept))
		}
	}
}

func TestLoadMultibyteCutThroughLoad(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "AGENTS.md"), strings.Repeat("日本語", 100)) // 900 bytes, no newline

	files, _ := loadUnder(root, Options{Cwd: root, MaxBytes: 100})

	require.Len(t, files, 1)
	kept, _, _ := strings.Cut(files[0].Content, "\n[decode: ")
	assert.Equal(t, strings.Repeat("日本語", 11), kept, "99 bytes: 33 whole runes")
	assert.Equal(t, "cut at 99 bytes of 900", files[0].Cut)
}

func TestLoadExactFitIsNotCut(t *testing.T) {
	root := t.TempDir()
	text := strings.Repeat("0123456789\n", 10) // 110 bytes, 10 lines
	writeFile(t, filepath.Join(root, "AGENTS.md"), text)

	files, _ := loadUnder(root, Options{Cwd: root, MaxLines: 10, MaxBytes: 110})

	require.Len(t, files, 1)
	assert.Equal(t, text, files[0].Content)
	assert.Empty(t, files[0].Cut)
}

func TestLoadDropsBOMAndCountsLastLineWithoutNewline(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "AGENTS.md"), "\uFEFFone\ntwo")

	files, _ := loadUnder(root, Options{Cwd: root})

	require.Len(t, files, 1)
	assert.Equal(t, "one\ntwo", files[0].Content)
	assert.Equal(t, 2, files[0].Lines)
}

func TestLoadEmptyFile(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "MEMORY.md"), "")

	files, warnings := loadUnder(root, Options{Cwd: root})

	assert.Empty(t, warnings)
	assert.Equal(t, []File{{Path: filepath.Join(root, "MEMORY.md")}}, files, "listed (decode memory shows it) with zero size and lines")
}

func TestLoadWarnsOnUnreadableAndKeepsGoing(t *testing.T) {
	root := t.TempDir()
	cwd := filepath.Join(root, "a")
	// A directory named AGENTS.md cannot be read as a file, even by root.
	require.NoError(t, os.MkdirAll(filepath.Join(root, "AGENTS.md"), 0o755))
	writeFile(t, filepath.Join(root, "MEMORY.md"), "still read\n")
	require.NoError(t, os.MkdirAll(cwd, 0o755))
	// A symlink loop and a dangling symlink fail for root too.
	require.NoError(t, os.Symlink("AGENTS.md", filepath.Join(cwd, "AGENTS.md")))
	require.NoError(t, os.Symlink("gone.md", filepath.Join(cwd, "MEMORY.md")))

	files, warnings := loadUnder(root, Options{Cwd: cwd})

	assert.Equal(t, []string{filepath.Join(root, "MEMORY.md")}, paths(files))
	require.Len(t, warnings, 3, "%q", warnings)
	assert.Contains(t, warnings[0], filepath.Join(root, "AGENTS.md")+": is a directory")
	assert.Contains(t, warnings[1], filepath.Join(cwd, "AGENTS.md"))
	assert.Contains(t, warnings[2], filepath.Join(cwd, "MEMORY.md")+": broken symlink")
}

func TestLoadWarnsOnPermissionDenied(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "AGENTS.md")
	writeFile(t, path, "secret rules\n")
	require.NoError(t, os.Chmod(path, 0o000))
	t.Cleanup(func() { _ = os.Chmod(path, 0o644) })
	if f, err := os.Open(path); err == nil {
		f.Close()
		t.Skip("running as a user who can read a mode-000 file (root)")
	}

	files, warnings := loadUnder(root, Options{Cwd: root})

	assert.Empty(t, files)
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "permission denied")
}

func TestLoadMissingDirsAreFine(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "file.txt"), "not a dir\n")

	for _, cwd := range []string{
		filepath.Join(root, "does", "not", "exist"),
		filepath.Join(root, "file.txt", "sub"), // a parent is a file
	} {
		files, warnings := loadUnder(root, Options{Cwd: cwd, UserConfigDir: filepath.Join(root, "nope")})
		assert.Empty(t, files, cwd)
		assert.Empty(t, warnings, cwd)
	}
}

func TestRender(t *testing.T) {
	files := []File{
		{Path: "/home/u/.config/decode/AGENTS.md", Content: "Use British spelling.\n"},
		{Path: "/repo/MEMORY.md", Content: "  \n"},
		{Path: "/repo/pkg/AGENTS.md", Content: "Run go test ./pkg.\n\n"},
	}

	got := Render(files)

	assert.Equal(t, "# Instructions from AGENTS.md and MEMORY.md\n"+
		"Follow them; when they disagree, the later (nearer) file wins.\n"+
		"\n## /home/u/.config/decode/AGENTS.md\nUse British spelling.\n"+
		"\n## /repo/pkg/AGENTS.md\nRun go test ./pkg.\n", got)
	assert.Empty(t, Render(nil))
	assert.Empty(t, Render(files[1:2]), "only blank files give no section")
}

// BenchmarkLoad measures a start-up's memory lookup: ten directories deep,
// three files found, the rest missing.
func BenchmarkLoad(b *testing.B) {
	root := b.TempDir()
	cwd := filepath.Join(root, "1", "2", "3", "4", "5", "6", "7", "8", "9", "10")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		b.Fatal(err)
	}
	for _, p := range []string{filepath.Join(root, "AGENTS.md"), filepath.Join(root, "1", "2", "MEMORY.md"), filepath.Join(cwd, "AGENTS.md")} {
		if err := os.WriteFile(p, []byte(strings.Repeat("some instruction line\n", 100)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		Load(Options{Cwd: cwd, UserConfigDir: filepath.Join(root, "cfg")})
	}
}
