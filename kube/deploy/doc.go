// Package deploy checks the repository's deploy/ manifests (kustomize) against a real API server:
// its test renders every kustomization as kubectl apply -k would and applies each object with a
// server-side dry run, so a manifest the API server rejects fails the build. It has no code of its
// own; see deploy/README.md for the manifests.
package deploy
