"""Model providers: one streaming adapter per vendor wire format, all speaking `models.base`."""
