"""roundoff.cli"""
