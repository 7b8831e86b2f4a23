"""`mta-sts.<domain>` of a verified hosted domain: its MTA-STS policy file, and nothing else."""
