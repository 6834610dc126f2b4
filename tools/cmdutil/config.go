package cmdutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"gopkg.in/yaml.v3"
)

// Profile is a named set of connection settings.
type Profile struct {
	Brokers   []string `json:"brokers" yaml:"brokers"`
	Zookeeper string   `json:"zookeeper,omitempty" yaml:"zookeeper,omitempty"`
	ClientID  string   `json:"client_id,omitempty" yaml:"client_id,omitempty"`
	// Security holds TLS and SASL settings (never a password: a password file
	// or KTOOL_SASL_PASSWORD supplies it).
	Security *Security `json:"security,omitempty" yaml:"security,omitempty"`
}

// Config is ktool's configuration file (KTOOL_CONFIG, default
// <user config dir>/ktool/config.yaml).
type Config struct {
	Current  string              `json:"current_profile" yaml:"current_profile"`
	Profiles map[string]*Profile `json:"profiles" yaml:"profiles"`

	path string
}

// DefaultConfigPath is where the config file lives unless KTOOL_CONFIG says otherwise.
func DefaultConfigPath() string {
	if p := os.Getenv("KTOOL_CONFIG"); p != "" {
		return p
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		dir = "."
	}
	return filepath.Join(dir, "ktool", "config.yaml")
}

// LoadConfig reads the config at path; a missing file is an empty config.
func LoadConfig(path string) (*Config, error) {
	c := &Config{Profiles: map[string]*Profile{}, path: path}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading config %s: %w", path, err)
	}
	if err := yaml.Unmarshal(b, c); err != nil {
		return nil, fmt.Errorf("config %s is not valid YAML: %w", path, err)
	}
	if c.Profiles == nil {
		c.Profiles = map[string]*Profile{}
	}
	return c, nil
}

// Path is the file the config was loaded from.
func (c *Config) Path() string { return c.path }

// Names returns the profile names, sorted.
func (c *Config) Names() []string {
	names := make([]string, 0, len(c.Profiles))
	for n := range c.Profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Save writes the config atomically (temp file + rename).
func (c *Config) Save() error {
	if err := os.MkdirAll(filepath.Dir(c.path), 0o755); err != nil {
		return err
	}
	b, err := yaml.Marshal(c)
	if err != nil {
		return err
	}
	tmp := c.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, c.path)
}
