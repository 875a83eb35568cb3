"""The policy controller: templates and policies in, claims and ResourceBindings out."""
