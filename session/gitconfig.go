package session

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// writeConfig is what the store takes from git's configuration about how
// to write: how long to wait for a held ref lock and what to fsync.
type writeConfig struct {
	// refLockTimeout is core.filesRefLockTimeout: how long an update waits
	// for a <ref>.lock another process holds (git's default, 100 ms).
	refLockTimeout time.Duration
	// fsyncObjects and fsyncRefs say whether loose objects (and their
	// directories) and refs are fsynced, from core.fsync (git's default
	// syncs neither) and the older core.fsyncObjectFiles.
	fsyncObjects bool
	fsyncRefs    bool
}

func defaultWriteConfig() writeConfig {
	return writeConfig{refLockTimeout: 100 * time.Millisecond}
}

// readWriteConfig reads the settings from the global configuration files
// and then the repository's, so that the repository's win, as in git.
// Unreadable files are skipped, as git skips missing ones.
func readWriteConfig(gitDir string, env Env) writeConfig {
	c := defaultWriteConfig()
	var files []string
	if x := env.get("XDG_CONFIG_HOME"); x != "" {
		files = append(files, filepath.Join(x, "git", "config"))
	} else if env.Home != "" {
		files = append(files, filepath.Join(env.Home, ".config", "git", "config"))
	}
	if env.Home != "" {
		files = append(files, filepath.Join(env.Home, ".gitconfig"))
	}
	if g := env.get("GIT_CONFIG_GLOBAL"); g != "" {
		files = []string{g}
	}
	files = append(files, filepath.Join(gitDir, "config"))
	for _, f := range files {
		c.apply(f)
	}
	return c
}

// apply reads the [core] settings of one config file. It understands the
// plain "key = value" form git writes; includes and conditional includes
// are not followed.
func (c *writeConfig) apply(path string) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	core := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			name := strings.ToLower(strings.Trim(strings.Fields(strings.Trim(line, "[]"))[0], `"`))
			core = name == "core"
			continue
		}
		if !core {
			continue
		}
		key, val, _ := strings.Cut(line, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		val = strings.Trim(strings.TrimSpace(val), `"`)
		switch key {
		case "filesreflocktimeout":
			if ms, err := strconv.Atoi(val); err == nil {
				if ms < 0 {
					ms = 24 * 3600 * 1000 // git: negative waits indefinitely; a day is as long
				}
				c.refLockTimeout = time.Duration(ms) * time.Millisecond
			}
		case "fsyncobjectfiles":
			c.fsyncObjects = gitBool(val)
		case "fsync":
			c.fsyncObjects, c.fsyncRefs = fsyncComponents(val)
		}
	}
}

// fsyncComponents reads core.fsync's list of components, as git does: a
// name adds it, "-name" removes it, aggregates stand for their parts.
func fsyncComponents(val string) (objects, refs bool) {
	for _, name := range strings.Split(val, ",") {
		name = strings.ToLower(strings.TrimSpace(name))
		on := !strings.HasPrefix(name, "-")
		name = strings.TrimPrefix(name, "-")
		switch name {
		case "none":
			objects, refs = false, false
		case "loose-object":
			objects = on
		case "reference":
			refs = on
		case "objects":
			objects = on
		case "committed", "added", "all":
			objects, refs = on, on
		}
	}
	return objects, refs
}

func gitBool(v string) bool {
	switch strings.ToLower(v) {
	case "", "true", "yes", "on", "1":
		return true
	}
	return false
}
