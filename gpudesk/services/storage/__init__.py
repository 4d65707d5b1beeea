"""The user's own bucket for a run's checkpoints, logs and outputs (S3, COS, OSS).

One boto3 S3 client for all three clouds, through their S3-compatible endpoints
(docs/storage.md says why). Qt-free.

May import: ``services.core``, ``services.money`` (the month's spend maths, for
``usage``), ``services.cloud`` (credentials and their type only).
"""
