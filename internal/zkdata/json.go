package zkdata

import (
	"encoding/json"
	"fmt"
)

// marshal encodes the maps, slices and numbers this package builds; those
// cannot fail to encode, so a failure is a bug in this package.
func marshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("zkdata: encoding %T: %v", v, err))
	}
	return b
}
