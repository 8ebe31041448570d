package session

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFsyncComponents(t *testing.T) {
	for val, want := range map[string][2]bool{
		"":                              {false, false},
		"committed":                     {true, true},
		"all":                           {true, true},
		"objects":                       {true, false},
		"loose-object,reference":        {true, true},
		"committed,-loose-object":       {false, true},
		"default":                       {false, false},
		"reference":                     {false, true},
		"all,-reference":                {true, false},
		"pack,pack-metadata,none,index": {false, false},
	} {
		objects, refs := fsyncComponents(val)
		assert.Equal(t, want, [2]bool{objects, refs}, "core.fsync=%q", val)
	}
}

// The store reads core.fsync, core.fsyncObjectFiles and
// core.filesRefLockTimeout as git writes them, the repository's config
// over the global one, and appends with fsync on pass git fsck.
func TestWriteConfigFromGit(t *testing.T) {
	tb := newTestbed(t)
	dir := tb.repo()
	st := tb.store(dir)
	assert.Equal(t, defaultWriteConfig(), st.refs.cfg, "git's defaults: no fsync, 100 ms")

	tb.git(dir, "config", "--global", "core.fsyncObjectFiles", "true")
	tb.git(dir, "config", "core.filesRefLockTimeout", "250")
	st = tb.store(dir)
	assert.Equal(t, writeConfig{refLockTimeout: 250 * time.Millisecond, fsyncObjects: true}, st.refs.cfg)

	tb.git(dir, "config", "core.fsync", "committed")
	st = tb.store(dir)
	assert.True(t, st.refs.cfg.fsyncRefs)
	assert.True(t, st.db.fsync)
	s, err := st.Create(ctx)
	require.NoError(t, err)
	appendN(t, s, 3, "synced")
	tb.git(dir, "fsck", "--strict")
}
