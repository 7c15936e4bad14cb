module example.com/ingest-example

go 1.21
