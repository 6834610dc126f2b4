package broker

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/ktoolhq/ktool/broker/config"
)

// metaProperties is Kafka's meta.properties in each log dir: which broker and
// cluster the data belongs to.
type metaProperties struct {
	BrokerID  int32
	ClusterID string
}

func readMetaProperties(dir string) (*metaProperties, error) {
	props, err := config.ReadPropertiesFile(filepath.Join(dir, "meta.properties"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	id, err := strconv.ParseInt(props["broker.id"], 10, 32)
	if err != nil {
		return nil, fmt.Errorf("%s/meta.properties: bad broker.id %q", dir, props["broker.id"])
	}
	return &metaProperties{BrokerID: int32(id), ClusterID: props["cluster.id"]}, nil
}

func writeMetaProperties(dir string, m metaProperties) error {
	body := fmt.Sprintf("#\n#%s\nversion=0\nbroker.id=%d\ncluster.id=%s\n", "Written by ktool; identifies the broker and cluster owning this directory", m.BrokerID, m.ClusterID)
	tmp := filepath.Join(dir, "meta.properties.tmp")
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, "meta.properties"))
}
