module drjosh.dev/zzglob

go 1.24

require github.com/bmatcuk/doublestar/v4 v4.6.1
