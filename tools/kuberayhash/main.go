// Command kuberayhash prints the RayCluster spec hashes KubeRay v1.7 computes, for the
// unit fixtures of rayop's Recreate hash (tests/unit/fixtures/raycluster/hashes.txt).
//
//	kuberayhash hash FILE...   one line per RayCluster document (YAML or JSON):
//	                           "FILE#N NAME HASH", the ray.io/upgrade-strategy-recreate-hash
//	                           KubeRay v1.7 stamps (GenerateHashWithoutReplicasAndWorkersToDelete:
//	                           replicas, min/max, workersToDelete, tolerations, schedulingGates
//	                           and upgradeStrategy muted; encoding/json of the typed spec; SHA-1;
//	                           base32 hex)
//	kuberayhash json FILE      the muted spec of the first document as encoding/json writes it
//
// The algorithm is re-stated here (a few lines), not imported: only KubeRay's API types
// are used, copied for the run by gen.sh KUBERAY_CHECKOUT (as tools/gotypes does).
package main

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/base32"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	rayv1 "kuberayhash/rayv1"
	"sigs.k8s.io/yaml"
)

// muted is GenerateHashWithoutReplicasAndWorkersToDelete's copy of the spec (s is a
// private decode, so it is changed in place).
func muted(s *rayv1.RayClusterSpec) *rayv1.RayClusterSpec {
	s.HeadGroupSpec.Template.Spec.Tolerations = nil
	s.HeadGroupSpec.Template.Spec.SchedulingGates = nil
	for i := range s.WorkerGroupSpecs {
		g := &s.WorkerGroupSpecs[i]
		g.Replicas, g.MaxReplicas, g.MinReplicas = nil, nil, nil
		g.ScaleStrategy.WorkersToDelete = nil
		g.Template.Spec.Tolerations = nil
		g.Template.Spec.SchedulingGates = nil
	}
	s.UpgradeStrategy = nil
	return s
}

func hashOf(spec *rayv1.RayClusterSpec) (string, []byte) {
	b, err := json.Marshal(muted(spec))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sum := sha1.Sum(b)
	return base32.HexEncoding.EncodeToString(sum[:]), b
}

// docs splits a YAML stream on "---" lines.
func docs(data []byte) [][]byte {
	var out [][]byte
	var cur bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimRight(line, " ") == "---" {
			out = append(out, append([]byte(nil), cur.Bytes()...))
			cur.Reset()
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
	}
	return append(out, cur.Bytes())
}

func clusters(path string) []rayv1.RayCluster {
	data, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var out []rayv1.RayCluster
	for _, d := range docs(data) {
		var head struct{ Kind string }
		if yaml.Unmarshal(d, &head) != nil || head.Kind != "RayCluster" {
			continue
		}
		var rc rayv1.RayCluster
		if err := yaml.Unmarshal(d, &rc); err != nil {
			fmt.Fprintln(os.Stderr, path, err)
			os.Exit(1)
		}
		out = append(out, rc)
	}
	return out
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: kuberayhash hash FILE... | json FILE")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "json":
		for _, rc := range clusters(os.Args[2]) {
			_, b := hashOf(&rc.Spec)
			os.Stdout.Write(append(b, '\n'))
			break
		}
	case "hash":
		for _, p := range os.Args[2:] {
			for n, rc := range clusters(p) {
				h, _ := hashOf(&rc.Spec)
				fmt.Printf("%s#%d %s %s\n", p, n, rc.Name, h)
			}
		}
	default:
		fmt.Fprintln(os.Stderr, "unknown command", os.Args[1])
		os.Exit(2)
	}
}
