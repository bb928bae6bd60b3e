"""roundoff.execute"""
