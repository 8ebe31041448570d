package session_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"decode/session"
	"decode/session/storetest"
)

func TestGitStoreConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) session.Sessions {
		home := t.TempDir()
		work := filepath.Join(home, "work") // outside any repository: a bare store of its own
		require.NoError(t, os.Mkdir(work, 0o755))
		env := map[string]string{"HOME": home, "DECODE_STORE": filepath.Join(home, "store"), "GIT_CEILING_DIRECTORIES": home}
		st, err := session.OpenStore(work, session.Env{Getenv: func(k string) string { return env[k] }, Home: home})
		require.NoError(t, err)
		return st.Sessions()
	})
}

func TestMemoryStoreConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) session.Sessions { return session.NewMemory() })
}
