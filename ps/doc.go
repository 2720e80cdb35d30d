// Package ps is the INA parameter server: it merges partial sums by bitmap, once per chunk (README.md).
package ps
