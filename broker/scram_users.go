package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

// updateUserConfig changes /config/users/<user> with f, conditionally on the
// znode's version so concurrent changes of other mechanisms are not lost, then
// leaves a config change notification, as Kafka's AdminZkClient does. A config
// left empty is deleted.
func (b *Broker) updateUserConfig(ctx context.Context, user string, f func(map[string]string) error) error {
	path := zkdata.ConfigUserPath(user)
	for attempt := 0; attempt < 10; attempt++ {
		s := b.Store()
		data, st, err := s.Get(ctx, path)
		exists := err == nil
		if err != nil && !errors.Is(err, coord.ErrNoNode) {
			return err
		}
		m := map[string]string{}
		if exists {
			if m, err = zkdata.DecodeConfig(data); err != nil {
				return err
			}
		}
		if err := f(m); err != nil {
			return err
		}
		switch {
		case !exists && len(m) == 0:
			return nil
		case !exists:
			_, err = s.CreateAll(ctx, path, zkdata.EncodeConfig(m), coord.Persistent)
		case len(m) == 0:
			err = s.Delete(ctx, path, st.Version)
		default:
			_, err = s.Set(ctx, path, zkdata.EncodeConfig(m), st.Version)
		}
		if errors.Is(err, coord.ErrBadVersion) || errors.Is(err, coord.ErrNodeExists) || errors.Is(err, coord.ErrNoNode) {
			continue // raced with another change: read again
		}
		if err != nil {
			return err
		}
		_, err = s.CreateAll(ctx, zkdata.ConfigChangePath(), zkdata.EncodeConfigChange(zkdata.ConfigTypeUser+"/"+zkdata.SanitizeUser(user)), coord.PersistentSequential)
		return err
	}
	return fmt.Errorf("user %q: too many concurrent changes", user)
}

// scramUsers lists the users with SCRAM credentials: user -> mechanism -> credential.
func (b *Broker) scramUsers(ctx context.Context) (map[string]map[string]zkdata.ScramCredential, error) {
	names, _, err := b.Store().Children(ctx, zkdata.ConfigUsersPath)
	if errors.Is(err, coord.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]zkdata.ScramCredential{}
	for _, n := range names {
		user, err := zkdata.DesanitizeUser(n)
		if err != nil {
			continue
		}
		creds, err := b.userCredentials(ctx, user)
		if err != nil {
			return nil, err
		}
		if len(creds) > 0 {
			out[user] = creds
		}
	}
	return out, nil
}

// userCredentials reads one user's SCRAM credentials (none when it has no znode).
func (b *Broker) userCredentials(ctx context.Context, user string) (map[string]zkdata.ScramCredential, error) {
	data, _, err := b.Store().Get(ctx, zkdata.ConfigUserPath(user))
	if errors.Is(err, coord.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	m, err := zkdata.DecodeConfig(data)
	if err != nil {
		return nil, err
	}
	out := map[string]zkdata.ScramCredential{}
	for _, mech := range zkdata.ScramMechanisms {
		if v, ok := m[mech]; ok {
			c, err := zkdata.DecodeScramCredential(v)
			if err != nil {
				b.logger.Warn("unreadable SCRAM credential", "user", user, "mechanism", mech, "err", err)
				continue
			}
			out[mech] = c
		}
	}
	return out, nil
}
