"""roundoff.capture"""
