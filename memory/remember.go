package memory

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"
)

// ErrSecret is wrapped by Remember's error when a sentence looks like it
// holds a secret, so callers can tell it from an I/O failure.
var ErrSecret = errors.New("looks like it contains a secret")

// Remember appends "- 2006-01-02: sentence" to the MEMORY.md at path,
// creating it if needed. The sentence is put on one line with its whitespace
// collapsed. It returns false, writing nothing, when an equal sentence (same
// words ignoring case, whitespace and a final period) is already a bullet in
// the file. A sentence that looks like it holds a secret (an API key, a long
// hex or base64 token, "password=") is refused with an error wrapping
// ErrSecret: memory files are committed and read into every prompt.
func Remember(path, sentence string, now time.Time) (bool, error) {
	sentence = strings.Join(strings.Fields(sentence), " ")
	if sentence == "" {
		return false, errors.New("remember: empty sentence")
	}
	if kind := secretKind(sentence); kind != "" {
		return false, fmt.Errorf("remember: sentence %w (%s); not written", ErrSecret, kind)
	}
	// MEMORY.md comes with the repository: a committed symlink would make
	// this append land wherever it points (.git/hooks/pre-commit,
	// ~/.bashrc). Never follow one, and write only a regular file.
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		if fi.Mode()&os.ModeSymlink != 0 {
			return false, fmt.Errorf("remember: %s is a symlink; not written through it (replace it with a file to keep memory there)", path)
		}
		return false, fmt.Errorf("remember: %s is not a regular file; not written", path)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|noFollow, 0o644)
	if err != nil {
		return false, fmt.Errorf("remember: %w", err)
	}
	defer f.Close()
	if multiplyLinked(f) {
		return false, fmt.Errorf("remember: %s has other names (a hard link); not written through it", path)
	}
	old, err := io.ReadAll(f)
	if err != nil {
		return false, fmt.Errorf("remember: %w", err)
	}
	want := normalise(sentence)
	for _, line := range strings.Split(string(old), "\n") {
		if text, ok := bulletText(line); ok && normalise(text) == want {
			return false, nil
		}
	}
	entry := fmt.Sprintf("- %s: %s\n", now.Format(time.DateOnly), sentence)
	if len(old) > 0 && old[len(old)-1] != '\n' {
		entry = "\n" + entry
	}
	if _, err := f.WriteString(entry); err != nil {
		return false, fmt.Errorf("remember: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return false, fmt.Errorf("remember: close %s: %w", path, err)
	}
	return true, nil
}

// bulletText returns a Markdown bullet's text without a leading
// "2006-01-02:" date, so hand-written bullets count as duplicates too.
func bulletText(line string) (string, bool) {
	line = strings.TrimSpace(line)
	for _, b := range []string{"- ", "* "} {
		if rest, ok := strings.CutPrefix(line, b); ok {
			rest = strings.TrimSpace(rest)
			if len(rest) >= 11 && rest[10] == ':' {
				if _, err := time.Parse(time.DateOnly, rest[:10]); err == nil {
					rest = strings.TrimSpace(rest[11:])
				}
			}
			return rest, true
		}
	}
	return "", false
}

// normalise folds case, whitespace and a final period for comparison.
func normalise(s string) string {
	s = strings.ToLower(strings.Join(strings.Fields(s), " "))
	return strings.TrimRight(s, ". ")
}

// secretPattern is the shape of a known kind of credential.
type secretPattern struct {
	kind string
	re   *regexp.Regexp
}

// secretPatterns compiles the patterns on first use, not at package init,
// since every decode start links this package and few runs remember.
var secretPatterns = sync.OnceValue(func() []secretPattern {
	return []secretPattern{
		{"API key sk-…", regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{16,}`)},
		{"Google API key AIza…", regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{30,}`)},
		{"GitHub token", regexp.MustCompile(`\b(gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})`)},
		{"AWS access key", regexp.MustCompile(`\b(AKIA|ASIA)[0-9A-Z]{16}\b`)},
		{"Slack token", regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9-]{10,}`)},
		{"private key", regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY`)},
		// "password: …" is refused too; other words only with "=", since
		// "the token: …" is ordinary prose.
		{"password", regexp.MustCompile(`(?i)(password|passwd)\s*[=:]\s*\S`)},
		{"secret assignment", regexp.MustCompile(`(?i)(pwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token|token)\s*=\s*\S{4,}`)},
		{"bearer token", regexp.MustCompile(`(?i)\bbearer\s+[A-Za-z0-9._~+/-]{16,}`)},
		// Runs of base64, base64url and hex characters, judged by
		// tokenLooksSecret. "/" is left out so file paths split into short
		// pieces.
		{"", regexp.MustCompile(`[A-Za-z0-9+_=-]{24,}`)},
	}
})

// secretKind names the kind of secret s seems to contain, or "".
func secretKind(s string) string {
	for _, p := range secretPatterns() {
		if p.kind != "" {
			if p.re.MatchString(s) {
				return p.kind
			}
			continue
		}
		for _, tok := range p.re.FindAllString(s, -1) {
			if kind := tokenLooksSecret(tok); kind != "" {
				return kind
			}
		}
	}
	return ""
}

// tokenLooksSecret judges one run of token characters. Hex of 32 or more
// digits is refused even though a full git object id is one: a short hash
// serves a memory sentence as well. Other runs of 24 or more count as base64
// tokens when they mix letters and digits and are as random as generated keys (Shannon
// entropy of at least 4 bits a character); identifiers such as
// TestRememberRefusesSecrets2 stay below that.
func tokenLooksSecret(tok string) string {
	hexRun := 0
	for _, c := range tok {
		if strings.ContainsRune("0123456789abcdefABCDEF", c) {
			hexRun++
			if hexRun >= 32 {
				return "long hex token"
			}
		} else {
			hexRun = 0
		}
	}
	if len(tok) < 24 || !strings.ContainsAny(tok, "0123456789") {
		return ""
	}
	if !strings.ContainsAny(tok, "abcdefghijklmnopqrstuvwxyz") && !strings.ContainsAny(tok, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") {
		return ""
	}
	if entropy(tok) >= 4.0 {
		return "long base64 token"
	}
	return ""
}

// entropy is the Shannon entropy of s in bits per byte.
func entropy(s string) float64 {
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	h := 0.0
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / float64(len(s))
			h -= p * math.Log2(p)
		}
	}
	return h
}
