"""Vocabularies the sandbox's seeded catalogues are built from: data, no logic.

`schema` holds the JSON Schema building blocks and the `Template`/`Domain` shapes; `domains_*` what
each market domain type (A1-A22) offers; `market` the names, prices and settlement weights of
providers; `datasets` the categories, column sets and words of the dataset catalogue.
"""
