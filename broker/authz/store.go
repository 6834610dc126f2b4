package authz

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ktoolhq/ktool/internal/acl"
)

// Znode paths, as Kafka's ZkData (ZkAclStore, ZkAclChangeStore).
const (
	LiteralRoot        = "/kafka-acl"
	PrefixedRoot       = "/kafka-acl-extended/prefixed"
	LiteralChangesPath = "/kafka-acl-changes"
	ExtendedChangePath = "/kafka-acl-extended-changes"
	ChangePrefix       = "acl_changes_"
)

// ResourcePath is where the ACLs of one resource pattern are stored.
func ResourcePath(r acl.Resource) string {
	root := LiteralRoot
	if r.Pattern == acl.PatternPrefixed {
		root = PrefixedRoot
	}
	return root + "/" + r.Type.String() + "/" + r.Name
}

type jsonEntry struct {
	Principal      string `json:"principal"`
	PermissionType string `json:"permissionType"`
	Operation      string `json:"operation"`
	Host           string `json:"host"`
}

type jsonACLs struct {
	Version int         `json:"version"`
	ACLs    []jsonEntry `json:"acls"`
}

// EncodeEntries is the JSON of a resource znode.
func EncodeEntries(es []acl.Entry) []byte {
	v := jsonACLs{Version: 1, ACLs: make([]jsonEntry, 0, len(es))}
	for _, e := range es {
		v.ACLs = append(v.ACLs, jsonEntry{e.Principal, e.Permission.String(), e.Operation.String(), e.Host})
	}
	out, _ := json.Marshal(v)
	return out
}

// DecodeEntries reads a resource znode; entries that do not parse are an error.
func DecodeEntries(data []byte) ([]acl.Entry, error) {
	if len(data) == 0 {
		return nil, nil
	}
	var v jsonACLs
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("acl znode: %w", err)
	}
	if v.Version != 1 {
		return nil, fmt.Errorf("acl znode: unsupported version %d", v.Version)
	}
	out := make([]acl.Entry, 0, len(v.ACLs))
	for _, j := range v.ACLs {
		op, err := acl.ParseOperation(j.Operation)
		if err != nil {
			return nil, err
		}
		perm, err := acl.ParsePermission(j.PermissionType)
		if err != nil {
			return nil, err
		}
		out = append(out, acl.Entry{Principal: j.Principal, Host: j.Host, Operation: op, Permission: perm})
	}
	return out, nil
}

type jsonChange struct {
	Version      int    `json:"version"`
	ResourceType string `json:"resourceType"`
	Name         string `json:"name"`
	PatternType  string `json:"patternType"`
}

// EncodeChange is the notification of a change to r and the directory it goes in.
func EncodeChange(r acl.Resource) (dir string, data []byte) {
	if r.Pattern == acl.PatternLiteral {
		return LiteralChangesPath, []byte(r.Type.String() + ":" + r.Name)
	}
	out, _ := json.Marshal(jsonChange{Version: 1, ResourceType: r.Type.String(), Name: r.Name, PatternType: r.Pattern.String()})
	return ExtendedChangePath, out
}

// DecodeChange reads a notification found in dir.
func DecodeChange(dir string, data []byte) (acl.Resource, error) {
	if dir == LiteralChangesPath {
		t, name, ok := strings.Cut(string(data), ":")
		if !ok {
			return acl.Resource{}, fmt.Errorf("acl change %q is not Type:name", data)
		}
		rt, err := acl.ParseResourceType(t)
		if err != nil {
			return acl.Resource{}, err
		}
		return acl.Resource{Type: rt, Name: name, Pattern: acl.PatternLiteral}, nil
	}
	var c jsonChange
	if err := json.Unmarshal(data, &c); err != nil {
		return acl.Resource{}, fmt.Errorf("acl change: %w", err)
	}
	rt, err := acl.ParseResourceType(c.ResourceType)
	if err != nil {
		return acl.Resource{}, err
	}
	pt, err := acl.ParsePatternType(c.PatternType)
	if err != nil {
		return acl.Resource{}, err
	}
	if pt != acl.PatternLiteral && pt != acl.PatternPrefixed {
		return acl.Resource{}, fmt.Errorf("acl change: pattern type %s", pt)
	}
	return acl.Resource{Type: rt, Name: c.Name, Pattern: pt}, nil
}
