"""Apache Kafka as the side-by-side peer: install (Maven), cluster (KRaft), views, scenarios."""
