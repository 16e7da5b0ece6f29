package pgcluster

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// reachable returns an error naming the first directory above dir that
// the OS user u may not enter (no search permission for it), with the
// fix: PostgreSQL runs as u (root runs it as "postgres"), and a data
// directory under a private folder (mktemp -d makes them 0700) fails in
// initdb or pg_ctl with a message that does not say why.
func reachable(dir string, u *user.User) error {
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return nil // not a POSIX id: nothing to check
	}
	groups := map[uint32]bool{}
	if gids, err := u.GroupIds(); err == nil {
		for _, g := range gids {
			if n, err := strconv.Atoi(g); err == nil {
				groups[uint32(n)] = true
			}
		}
	}
	if n, err := strconv.Atoi(u.Gid); err == nil {
		groups[uint32(n)] = true
	}
	var chain []string
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		chain = append(chain, p)
		if p == filepath.Dir(p) {
			break
		}
	}
	for i := len(chain) - 1; i >= 0; i-- {
		p := chain[i]
		st, err := os.Stat(p)
		if err != nil {
			return nil // made below, or reported by what needs it
		}
		sys, ok := st.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		mode := st.Mode().Perm()
		var may bool
		switch {
		case sys.Uid == uint32(uid):
			may = mode&0o100 != 0
		case groups[sys.Gid]:
			may = mode&0o010 != 0
		default:
			may = mode&0o001 != 0
		}
		if !may {
			return fmt.Errorf("the cluster's programs run as the OS user %q (PostgreSQL refuses to run as root), which may not enter %s (mode %04o, owner uid %d), so it cannot reach the data directory %s; "+
				"fix: chmod o+x %s (a folder made by mktemp -d is 0700), or set GEOINGEST_HOME to a folder every user may enter",
				u.Username, p, mode, sys.Uid, dir, p)
		}
	}
	return nil
}
