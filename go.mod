module github.com/proserun/prose

go 1.26
