"""`kata serve`: the practice room in the browser (see graders.frontends.serve.server)."""
