"""roundoff.compiler"""
