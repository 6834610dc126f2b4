package user

import (
	"context"
	"fmt"

	"github.com/ktoolhq/ktool/internal/zkdata"
	"github.com/ktoolhq/ktool/tools/zk"
)

// zkStore writes /config/users/<user> and notifies the brokers through
// /config/changes, as kafka-configs.sh --zookeeper does.
type zkStore struct{ c *zk.Conn }

func (z zkStore) close() { z.c.Close() }

func (z zkStore) read(ctx context.Context, user string) (map[string]string, int32, bool, error) {
	// tools/zk's errors name the znode rather than wrap ErrNoNode: ask first.
	ok, _, err := z.c.Exists(ctx, zkdata.ConfigUserPath(user))
	if err != nil {
		return nil, 0, false, err
	}
	if !ok {
		return map[string]string{}, -1, false, nil
	}
	data, st, err := z.c.Get(ctx, zkdata.ConfigUserPath(user))
	if err != nil {
		return nil, 0, false, err
	}
	m, err := zkdata.DecodeConfig(data)
	if err != nil {
		return nil, 0, false, err
	}
	return m, st.Version, true, nil
}

func (z zkStore) list(ctx context.Context, users []string) ([]Credential, error) {
	if len(users) == 0 {
		ok, _, err := z.c.Exists(ctx, zkdata.ConfigUsersPath)
		if err != nil {
			return nil, err
		}
		var names []string
		if ok {
			if names, _, err = z.c.Children(ctx, zkdata.ConfigUsersPath); err != nil {
				return nil, err
			}
		}
		for _, n := range names {
			if u, err := zkdata.DesanitizeUser(n); err == nil {
				users = append(users, u)
			}
		}
	}
	var out []Credential
	for _, u := range users {
		m, _, _, err := z.read(ctx, u)
		if err != nil {
			return nil, err
		}
		for _, mech := range zkdata.ScramMechanisms {
			if v, ok := m[mech]; ok {
				c, err := zkdata.DecodeScramCredential(v)
				if err != nil {
					return nil, fmt.Errorf("user %s %s: %w", u, mech, err)
				}
				out = append(out, Credential{User: u, Mechanism: mech, Iterations: c.Iterations})
			}
		}
	}
	sortCreds(out)
	return out, nil
}

// update changes the user's config conditionally on its version, then leaves
// a change notification.
func (z zkStore) update(ctx context.Context, user string, f func(map[string]string)) error {
	m, version, exists, err := z.read(ctx, user)
	if err != nil {
		return err
	}
	f(m)
	path := zkdata.ConfigUserPath(user)
	data := zkdata.EncodeConfig(m)
	if exists {
		err = z.c.Set(ctx, path, data, version)
	} else {
		if err = z.c.EnsurePath(ctx, zkdata.ConfigUsersPath); err == nil {
			err = z.c.Create(ctx, path, data, false)
		}
	}
	if err != nil {
		return fmt.Errorf("%w (changed concurrently? run the command again)", err)
	}
	if err := z.c.EnsurePath(ctx, zkdata.ConfigChangesPath); err != nil {
		return err
	}
	_, err = z.c.CreateSequential(ctx, zkdata.ConfigChangePath(), zkdata.EncodeConfigChange(zkdata.ConfigTypeUser+"/"+zkdata.SanitizeUser(user)))
	return err
}

func (z zkStore) upsert(ctx context.Context, user string, ups []upsertion) error {
	creds := map[string]string{}
	for _, u := range ups {
		c, err := zkdata.ScramFromSalted(u.mechanism, u.salted, u.salt, u.iterations)
		if err != nil {
			return err
		}
		creds[u.mechanism] = zkdata.EncodeScramCredential(c)
	}
	return z.update(ctx, user, func(m map[string]string) {
		for k, v := range creds {
			m[k] = v
		}
	})
}

func (z zkStore) remove(ctx context.Context, user string, mechs []string) error {
	return z.update(ctx, user, func(m map[string]string) {
		for _, k := range mechs {
			delete(m, k)
		}
	})
}
